"""A reader that earns the right to assert: a model names the past incident that is the same failure, and shows why.

    Judge(model, ...)       a model behind a server (any litellm id), asked once per diagnosis that has candidates
    Judge.read(evidence, candidates)
                            its :class:`Verdict`, or None when the model or its server failed (logged)
    Verdict                 the pick (or none), the words it quoted, why the pick is void, whether it may vouch
    configured(judge, model)
                            the Judge that ``memory.judge`` names, or None (``none``, the default)

The model reads a compact rendering (:func:`evidence_block`, :func:`incident_block`): the failing signal first
(status, error kind, the error text), then what the target answered; then up to :data:`CANDIDATES` past incidents
whose fix could apply (id, target, what failed, fix). It answers in constrained JSON (a schema in
``response_format``, which llama.cpp's server and Ollama honour): which one is the same failure, or none, with
the words of the evidence and the words of the incident that tie them. The product checks those words
(:func:`void`): each quote must occur, normalised and case-insensitive, in what the model was shown of the
evidence and of the incident it named, and the two must share a specific word (not a number, not the target's
name, not a word every failure says). Otherwise the verdict is void: a small model's say-so is not evidence.

A checked pick vouches (:attr:`Verdict.vouched`) only when the calibration of this exact model id allows it
(:mod:`monitor.memory.calibration`); else it is recorded with the claim and only suggests. The prompt is
``prompts/judge.yaml``; litellm is imported on the first judging only, with its price list kept offline.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from importlib import resources
from typing import Any

import yaml

from monitor.config.agent import ModelConfig
from monitor.config.memory import JudgeConfig
from monitor.core.claims import Claim
from monitor.memory import calibration
from monitor.memory.candidates import Candidate, clip
from monitor.memory.recall import Evidence

log = logging.getLogger(__name__)

CANDIDATES = 5  # past incidents the judge reads, at most: recall's best applicable ones with a fix
ANSWER_CHARS, SAID_CHARS, FIX_CHARS = 500, 300, 200  # of the target's answer, an incident's failure, its fix
QUOTE_CHARS = 80
# Words that tie nothing: they are in nearly every failure's text.
COMMON_WORDS = """
the and for with from this that not was were are has have been into over error errors failed failure
fail fails failing status http https request requests response server service returned returns
answer answered answers check checks health healthz unhealthy down unexpected unexpected_status true
false null none code
"""
COMMON = frozenset(COMMON_WORDS.split())
TOKEN = re.compile(r"\w(?:[\w.-]*\w)?")


@functools.cache
def prompt() -> dict[str, str]:
    """The judge's prompt: ``system`` and ``task`` (``prompts/judge.yaml``)."""
    text = (resources.files("monitor.memory") / "prompts" / "judge.yaml").read_text(encoding="utf-8")
    return {key: str(value) for key, value in yaml.safe_load(text).items()}


@functools.cache
def prompt_digest() -> str:
    """What a calibration was measured with: a judge calibrated on another prompt only suggests."""
    text = (resources.files("monitor.memory") / "prompts" / "judge.yaml").read_bytes()
    return "sha256:" + hashlib.sha256(text).hexdigest()[:16]


@dataclass(frozen=True)
class Verdict:
    """What the judge said: ``picked`` (None: none is the same failure), the quotes that tie it, ``void`` (why
    the pick does not count, "" when it does) and ``refused`` (why this model may not vouch, "" when it may)."""

    model: str
    picked: int | None
    evidence_words: str = ""
    incident_words: str = ""
    void: str = ""
    refused: str = ""
    seconds: float = 0.0

    @property
    def counts(self) -> int | None:
        """The pick, if its words were checked: what the memory would assert were the model allowed to."""
        return self.picked if self.picked is not None and not self.void else None

    @property
    def vouched(self) -> int | None:
        """The pick the memory may assert on this judge's word (``claims.claim(vouched=...)``), or None."""
        return None if self.refused else self.counts

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 3), "vouched": self.vouched}


def recorded(claim: Claim, verdict: Verdict | None) -> Claim:
    """A claim with the judge's verdict beside it (``judged``), as the diagnosis stores it."""
    return claim if verdict is None else replace(claim, judged=verdict.to_dict())


def evidence_block(evidence: Evidence) -> str:
    """The failing check, its signal first: status, error kind, the error text; then what the target answered."""
    lines = [f"status: {evidence.status_code if evidence.status_code is not None else 'no answer'}", f"error: {evidence.error or 'none'}"]
    if evidence.detail:
        lines.append(f"error text: {clip(evidence.detail, QUOTE_CHARS * 3)}")
    if evidence.answer:
        lines.append(f"the target answered: {clip(evidence.answer, ANSWER_CHARS)}")
    return "\n".join(lines)


def incident_block(c: Candidate) -> str:
    """One past incident as the judge reads it: id, target, what failed, fix."""
    failed = "; ".join(dict.fromkeys(line.strip() for line in (c.said or c.symptom).splitlines() if line.strip()))
    return f"#{c.id} on {c.target}: what failed: {clip(failed, SAID_CHARS)} | fix: {clip(c.fix or 'none noted', FIX_CHARS)}"


def schema(candidates: Sequence[Candidate]) -> dict[str, Any]:
    """The answer's JSON schema: the pick among these ids or none, and the two quotes."""
    quote = {"type": "string", "maxLength": QUOTE_CHARS}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["same", "evidence_words", "incident_words"],
        "properties": {
            "same": {"type": "string", "enum": [*(f"#{c.id}" for c in candidates), "none"]},
            "evidence_words": quote,
            "incident_words": quote,
        },
    }


def messages(evidence: Evidence, candidates: Sequence[Candidate]) -> list[dict[str, str]]:
    text = prompt()
    task = text["task"].format(
        evidence=evidence_block(evidence),
        incidents="\n".join(incident_block(c) for c in candidates),
        choices=", ".join([*(f"#{c.id}" for c in candidates), "none"]),
    )
    return [{"role": "system", "content": text["system"]}, {"role": "user", "content": task}]


def normal(text: str) -> str:
    """``text`` as quotes are compared: NFKC, case-folded, JSON's escapes and runs of space undone."""
    flat = unicodedata.normalize("NFKC", text).replace('\\"', '"').replace("\\n", " ").casefold()
    return " ".join(flat.split())


def tokens(text: str) -> set[str]:
    """The words of ``text``: each whole (``pg-main``) and in its parts (``pg``, ``main``)."""
    found = set()
    for word in TOKEN.findall(normal(text)):
        found.add(word)
        found.update(part for part in re.split(r"[.-]", word) if part)
    return found


def ties(one: str, other: str, target: str) -> set[str]:
    """The specific words two quotes share: not a number, not the target's name, not a word every failure says."""
    plain = tokens(target) | COMMON
    return {w for w in tokens(one) & tokens(other) if len(w) >= 3 and not w.replace(".", "").isdigit() and w not in plain}


def void(picked: Candidate, evidence: Evidence, evidence_words: str, incident_words: str) -> str:
    """Why the quotes do not bear the pick out ("" when they do; see the module docstring)."""
    said, shown = normal(evidence_words).strip(" \"'`.,;:"), normal(incident_words).strip(" \"'`.,;:")
    if not said or not shown:
        return "it quoted no words"
    if said not in normal(evidence_block(evidence)):
        return "its evidence words are not in the evidence"
    if shown not in normal(incident_block(picked)):
        return f"its incident words are not in #{picked.id}"
    if not ties(said, shown, evidence.target):
        return "the words it quoted share nothing specific"
    return ""


def parse(content: str, candidates: Sequence[Candidate], evidence: Evidence, model: str) -> Verdict:
    """The verdict in a constrained answer; an answer that is not one names none, and says why."""
    match = re.search(r"\{.*\}", content or "", re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return Verdict(model, None, void="its answer was not the JSON asked for")
    words = (str(data.get("evidence_words") or "")[:QUOTE_CHARS], str(data.get("incident_words") or "")[:QUOTE_CHARS])
    same = str(data.get("same") or "none").strip().lstrip("#")
    picked = next((c for c in candidates if str(c.id) == same), None)
    if picked is None:
        return Verdict(model, None, *words, void="" if same.lower() == "none" else f"#{same} was not among the incidents shown")
    return Verdict(model, picked.id, *words, void=void(picked, evidence, *words))


class Judge:
    """One model that reads the candidates of recall (module docstring). ``calibration``: the file ``monitor eval
    --judge`` wrote; ``max_false_recall``: the limit its measured false recall must stay within to vouch."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_tokens: int = 160,
        calibration: str | None = None,
        max_false_recall: float = 0.05,
    ) -> None:
        self.model, self.api_base, self.api_key = model, api_base, api_key
        self.timeout, self.max_tokens = timeout, max_tokens
        self.calibration, self.max_false_recall = calibration, max_false_recall

    def read(self, evidence: Evidence, candidates: Sequence[Candidate]) -> Verdict | None:
        """Which of ``candidates`` is the same failure as ``evidence``; None when the model could not say."""
        shown = list(candidates)[:CANDIDATES]
        if not shown:
            return None
        started = time.perf_counter()
        try:
            content = self.ask(messages(evidence, shown), schema(shown))
        except Exception as exc:  # the model or its server: no verdict, and recall alone speaks
            log.warning("judge %s gave no verdict: %s: %s", self.model, type(exc).__name__, str(exc)[:200])
            return None
        verdict = parse(content, shown, evidence, self.model)
        refused = calibration.refusal(self.calibration, self.model, self.max_false_recall, prompt_digest())
        return replace(verdict, refused=refused, seconds=time.perf_counter() - started)

    def ask(self, chat: list[dict[str, str]], answer: dict[str, Any]) -> str:
        """The model's answer to ``chat``, constrained to the schema ``answer``."""
        litellm = prepared(self.model, self.api_base)
        response = litellm.completion(
            model=self.model,
            messages=chat,
            api_base=self.api_base,
            api_key=self.api_key or ("none" if self.api_base else None),
            timeout=self.timeout,
            temperature=0.0,
            max_tokens=self.max_tokens,
            max_retries=0,
            response_format={"type": "json_schema", "json_schema": {"name": "verdict", "schema": answer, "strict": True}},
        )
        return str(response.choices[0].message.content or "")


@functools.cache
def prepared(model: str, api_base: str | None) -> Any:
    """litellm, imported once, offline: no price list from the internet, and an Ollama model registered so that
    a completion makes no stray ``/api/show`` calls to another server."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    provider = model.split("/", 1)[0]
    if provider in ("ollama", "ollama_chat") and api_base:
        os.environ.setdefault("OLLAMA_API_BASE", api_base)
        free = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
        litellm.register_model({model: {"litellm_provider": provider, "mode": "chat", **free}})
    return litellm


def configured(judge: JudgeConfig, model: ModelConfig) -> Judge | None:
    """The judge ``memory.judge`` names: None for ``none``; ``agent`` is the model the agent talks to (none when
    that is the builtin model), at ``model.api_base`` unless the judge names its own server."""
    if not judge.enabled:
        return None
    name, where = judge.model, judge.api_base
    if name == "agent":
        if model.id == "builtin":
            return None
        name = model.id if model.id != "auto" else f"ollama_chat/{model.name}"
        ollama = name.split("/", 1)[0] in ("ollama", "ollama_chat")
        where = where or (model.api_base if ollama or "api_base" in model.model_fields_set else None)
    return Judge(
        name,
        api_base=where,
        api_key=judge.api_key or (model.api_key if judge.model == "agent" else None),
        timeout=judge.timeout,
        max_tokens=judge.max_tokens,
        calibration=judge.calibration,
        max_false_recall=judge.max_false_recall,
    )
