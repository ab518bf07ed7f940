"""The query parameters pages and the API take, checked: a bad one is :class:`BadRequest`, answered 400."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlencode

from starlette.requests import Request

from monitor.core.incidents import Incident
from monitor.core.results import StoredResult
from monitor.core.runs import Run
from monitor.web.pages import MAX_ID, WINDOWS

MAX_LIMIT = 500
MAX_FILTER = 200  # characters of the overview's name filter


class BadRequest(ValueError):
    """A query parameter the API cannot use; answered 400 with its message."""


def whole(raw: str) -> int | None:
    """``raw`` as a whole number a database can hold, or None: ASCII digits only ("²" is a digit to
    ``str.isdigit``), at most 2**63 - 1."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 19 or int(raw) > MAX_ID:
        return None
    return int(raw)


def limit(request: Request, default: int = 50) -> int:
    raw = request.query_params.get("limit", str(default))
    if whole(raw) is None or not 1 <= int(raw) <= MAX_LIMIT:
        raise BadRequest(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {raw!r}")
    return int(raw)


def page(request: Request) -> int:
    raw = request.query_params.get("page", "1")
    if whole(raw) is None or int(raw) < 1:
        raise BadRequest(f"page must be a whole number from 1, not {raw!r}")
    return int(raw)


def name_filter(request: Request) -> str:
    q = request.query_params.get("q", "").strip()
    if len(q) > MAX_FILTER:
        raise BadRequest(f"q (a part of target names) may have at most {MAX_FILTER} characters, not {len(q)}")
    return q


def int_param(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    value = whole(raw)
    if value is None:
        raise BadRequest(f"{name} must be a positive whole number up to {MAX_ID}, not {raw!r}")
    return value


def results_cursor(request: Request) -> tuple[float, int] | None:
    """``before=<checked_at>:<id>``, as the ``next`` link of a results page gives it."""
    raw = request.query_params.get("before")
    if not raw:
        return None
    at, _, row_id = raw.partition(":")
    try:
        checked_at, last = float(at), whole(row_id or str(MAX_ID))
    except ValueError:
        checked_at, last = math.nan, None
    if not math.isfinite(checked_at) or last is None:  # nan matched nothing on SQLite, everything on PostgreSQL
        raise BadRequest(f"before must be <checked_at>:<id> as a next link gives it, not {raw!r}")
    return checked_at, last


def result_cursor(result: StoredResult | None) -> str:
    """What ``before=`` says to continue after ``result``."""
    return f"{result.checked_at!r}:{result.id}" if result else ""


def window(request: Request, default: str) -> str:
    value = request.query_params.get("window", default)
    if value not in WINDOWS:
        raise BadRequest(f"window must be one of {', '.join(WINDOWS)}, not {value!r}")
    return value


T = TypeVar("T")


def next_page(request: Request, items: Sequence[T], size: int, cursor: Callable[[T], str]) -> str | None:
    """The URL of the next page, or None when this one was the last."""
    if len(items) < size:
        return None
    params = {**request.query_params, "before": cursor(items[-1]), "limit": str(size)}
    return f"{request.url.path}?{urlencode(params)}"


def by_id(row: dict[str, Any] | Incident | Run) -> str:
    return str(row["id"] if isinstance(row, dict) else row.id)
