"""The one JSON nesting limit of the relay, for intake and processing alike.

``MAX_DEPTH`` = 256 nested arrays/objects (``{"a": 1}`` is depth 1).  Why this number: every
body the relay accepts is later walked by recursive code — the standard library's JSON encoder
(fan-out's ``client_payload`` size, ``httpx``'s ``json=``), Jinja pages, SQLAlchemy ``JSON``
columns — which costs one or more Python frames per level.  Python's default recursion limit
is 1,000 frames, and a worker thread starts a few dozen frames deep, so a body of 980–1,024
levels (which orjson, limited to 1,024, parses) was acknowledged and then crashed processing
(``RecursionError``) — issue 17.  256 leaves a margin of ~3× on the deepest recursive path,
and GitHub's webhook payloads (octokit/webhooks examples) nest under 10 levels, CRCR callback and
HUD bodies under 15.

``too_deep(value)`` is iterative (no recursion whatever the input) and cheap on the hot path:
``quick_bound(raw)`` (a C-speed byte count of ``{`` and ``[``) proves most bodies shallow without
walking them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_DEPTH", "quick_bound", "too_deep", "depth_error"]

#: the accepted nesting depth (arrays and objects) of every JSON body and stored payload
MAX_DEPTH = 256


def quick_bound(raw: bytes | str, limit: int = MAX_DEPTH) -> bool:
    """``True`` when ``raw`` cannot nest deeper than ``limit``: it holds at most ``limit``
    opening brackets in all (brackets inside strings only over-count)."""
    if isinstance(raw, str):
        return raw.count("{") + raw.count("[") <= limit
    return raw.count(b"{") + raw.count(b"[") <= limit


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether the parsed JSON ``value`` nests arrays/objects deeper than ``limit``; an
    explicit stack, so any depth is safe to ask about."""
    if type(value) is not dict and type(value) is not list:  # orjson gives exact types
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > limit:
            return True
        for child in (node.values() if type(node) is dict else node):
            kind = type(child)
            if kind is dict or kind is list:
                push((child, depth + 1))
    return False


def depth_error(limit: int = MAX_DEPTH) -> str:
    """The reason given for a body over the limit (HTTP 400 detail, a delivery's error)."""
    return f"body nests too deeply (over {limit} levels of arrays/objects)"
