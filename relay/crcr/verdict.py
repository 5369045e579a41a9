"""Triage verdicts a downstream may attach to a callback (``workflow.triage_verdict``).

The schema and rules are CRCR's (``utils/triage_verdict.py``, ``tests/test_triage_verdict.py``);
this is our own implementation on pydantic.  The verdict is advisory and fully untrusted:

* structure — ``schema_version`` 1 (an int, or a string of digits; ``true`` is refused),
  ``category`` one of upstream/backend/infra/flake/unknown, ``confidence`` high/medium/low,
  ``summary`` a non-blank string; optional ``suspected_upstream`` (only with category
  ``upstream``: ``pr`` a positive int, ``commit`` 7–40 hex digits, ``reason``; a PR or a commit
  is required), ``evidence`` (objects with ``job``, ``test``, ``excerpt``, ``log_url``),
  ``reproduced_on_retry`` (a bool), ``analyzer`` (``name``, ``version``, ``model``,
  ``prompt_version``), ``analyzed_at`` (ISO 8601).  Strings must be strings (no coercion) and
  are stripped.  Any violation drops the *whole* verdict (``None``);
* overflow is cut, not refused — ``summary`` and ``excerpt`` to 1,000 characters, ``reason`` to
  300, short fields to 200, at most 10 evidence entries; empty evidence entries, an empty
  ``evidence`` list and an empty ``analyzer`` are left out; unknown keys are dropped;
* the serialized verdict must be ≤ 16 KiB, and every ``log_url`` a plain ``http``/``https`` URL
  with a host, no ``@`` in its authority and no whitespace or control character anywhere
  (it is rendered as a link) — else the verdict is dropped.

``validate_triage_verdict`` is called once per callback that carries a verdict, before the body
is stored, forwarded to the dashboard or rendered.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

__all__ = ["validate_triage_verdict", "MAX_VERDICT_BYTES", "CATEGORIES", "CONFIDENCES"]

log = logging.getLogger(__name__)

MAX_VERDICT_BYTES = 16 * 1024
CATEGORIES = ("upstream", "backend", "infra", "flake", "unknown")
CONFIDENCES = ("high", "medium", "low")
_HEX = re.compile(r"[0-9a-fA-F]{7,40}")


def _text(limit: int) -> Any:
    def clean(value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("must not be blank")
        return value[:limit]

    return Annotated[StrictStr, AfterValidator(clean)]


def _plain_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc \
            or any(c.isspace() or ord(c) < 0x20 for c in value):
        raise ValueError("must be a plain http(s) URL")
    return value


def _iso(value: str) -> str:
    datetime.fromisoformat(value)  # ValueError: not ISO 8601 (a "Z" offset is, since Python 3.11)
    return value


def _version(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("schema_version must be a number")
    return int(value.strip()) if isinstance(value, str) and value.strip().isdigit() else value


_Strict = ConfigDict(extra="ignore")


class _Suspect(BaseModel):
    model_config = _Strict
    pr: Annotated[StrictInt, AfterValidator(lambda v: v if v > 0 else _bad("pr must be positive"))] | None = None
    commit: Annotated[_text(200), AfterValidator(lambda v: v if _HEX.fullmatch(v) else _bad("hex sha"))] | None = None
    reason: _text(300) | None = None

    @model_validator(mode="after")
    def _names_one(self) -> _Suspect:
        if self.pr is None and self.commit is None:
            raise ValueError("suspected_upstream must name a pr or a commit")
        return self


def _bad(message: str) -> Any:
    raise ValueError(message)


class _Evidence(BaseModel):
    model_config = _Strict
    job: _text(200) | None = None
    test: _text(200) | None = None
    excerpt: _text(1000) | None = None
    log_url: Annotated[_text(500), AfterValidator(_plain_url)] | None = None


class _Analyzer(BaseModel):
    model_config = _Strict
    name: _text(200) | None = None
    version: _text(200) | None = None
    model: _text(200) | None = None
    prompt_version: _text(200) | None = None


class _Verdict(BaseModel):
    model_config = _Strict
    schema_version: Annotated[Literal[1], BeforeValidator(_version)]
    category: Literal[CATEGORIES]  # type: ignore[valid-type]
    confidence: Literal[CONFIDENCES]  # type: ignore[valid-type]
    summary: _text(1000)
    suspected_upstream: _Suspect | None = None
    evidence: Annotated[list[_Evidence], BeforeValidator(lambda v: v[:10] if isinstance(v, list) else v)] | None = None
    reproduced_on_retry: StrictBool | None = None
    analyzer: _Analyzer | None = None
    analyzed_at: Annotated[_text(200), AfterValidator(_iso)] | None = None

    @model_validator(mode="after")
    def _suspect_needs_upstream(self) -> _Verdict:
        if self.suspected_upstream is not None and self.category != "upstream":
            raise ValueError("suspected_upstream is only valid for category 'upstream'")
        return self


def validate_triage_verdict(raw: Any) -> dict[str, Any] | None:
    """The normalized verdict, or ``None`` when ``raw`` is absent or must be dropped (see the
    module docstring; the reason of a drop is logged, never raised)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        log.warning("triage verdict dropped: not an object")
        return None
    size = len(json.dumps(raw, default=str).encode("utf-8"))
    if size > MAX_VERDICT_BYTES:
        log.warning("triage verdict dropped: %d bytes, over %d", size, MAX_VERDICT_BYTES)
        return None
    try:
        verdict = _Verdict.model_validate(raw)
    except ValidationError as exc:
        log.warning("triage verdict dropped: %s", exc.errors(include_url=False)[0]["msg"])
        return None
    out = verdict.model_dump(exclude_none=True)
    out["evidence"] = [e for e in out.get("evidence", []) if e]
    for key in ("evidence", "analyzer"):
        if not out.get(key):
            out.pop(key, None)
    return out
