"""Parsing a JSON request body at the edge, one way for every route.

GitHub sends UTF-8 JSON (RFC 8259 §8.1: no byte-order mark); so do CRCR downstreams.  A body is
refused (``ValueError`` with the reason; the routes answer 400) when it is not strict UTF-8, starts
with a BOM, is not JSON, uses the non-standard constants ``NaN``/``Infinity`` (PostgreSQL's
``json`` type rejects them, so they could not be stored), or nests too deeply to parse.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_json_body"]


def _no_constants(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def parse_json_body(raw: bytes) -> tuple[Any, str]:
    """``(value, text)`` of a UTF-8 JSON body; raises ``ValueError`` naming what is wrong."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raise ValueError("body starts with a UTF-8 byte-order mark")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"body is not UTF-8 JSON: {exc.reason} at byte {exc.start}") from None
    try:
        return json.loads(text, parse_constant=_no_constants), text
    except json.JSONDecodeError as exc:
        raise ValueError(f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise ValueError("body nests too deeply") from None
