"""Parsing a JSON request body at the edge, one way for every route.

GitHub sends UTF-8 JSON (RFC 8259 §8.1: no byte-order mark); so do CRCR downstreams.  A body is
refused (``ValueError`` with the reason; the routes answer 400) when it is not strict UTF-8, starts
with a BOM, is not JSON, uses the non-standard constants ``NaN``/``Infinity`` or a number too
large for a double (PostgreSQL's ``json`` type rejects them, so they could not be stored), holds
a lone UTF-16 surrogate escape (not encodable as UTF-8), or nests deeper than
``relay.domain.jsonlimits.MAX_DEPTH`` (256) levels — the one limit processing applies too.

The parser is orjson (strict RFC 8259, about 3× the standard library's speed on a 25 KB webhook,
measured by ``bench/intake.py``); a refused body is parsed once more by the standard library
only to name the problem in its words.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from relay.domain.jsonlimits import MAX_DEPTH, depth_error, quick_bound, too_deep

__all__ = ["parse_json_body", "MAX_DEPTH"]


def _no_constants(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _reason(text: str, fast_error: str) -> str:
    """Why ``text`` is refused, in the standard library's words where it has some."""
    if "depth limit" in fast_error:
        return depth_error()
    try:
        json.loads(text, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        return f"body is not valid JSON: {exc}"
    except RecursionError:
        return depth_error()
    except ValueError as exc:
        return str(exc)
    return f"body is not valid JSON: {fast_error}"


def parse_json_body(raw: bytes) -> tuple[Any, str]:
    """``(value, text)`` of a UTF-8 JSON body; raises ``ValueError`` naming what is wrong."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raise ValueError("body starts with a UTF-8 byte-order mark")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"body is not UTF-8 JSON: {exc.reason} at byte {exc.start}") from None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(_reason(text, str(exc))) from None
    if not quick_bound(raw) and too_deep(value):
        raise ValueError(depth_error())
    return value, text
