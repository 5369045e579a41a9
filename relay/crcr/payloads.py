"""The ``client_payload`` CRCR sends with ``repository_dispatch``, and trimming to GitHub's cap.

Shape (CRCR; design §6): ``{"event_type": <GitHub event name>, "delivery_id": <X-GitHub-Delivery>,
"payload": <the upstream webhook body>}`` plus our ``callback`` block
``{"url": <relay>/api/crcr/callback, "token": <per-dispatch bearer token>}`` — 4 top-level
properties of GitHub's 10 allowed.

GitHub caps ``client_payload`` at 65,536 bytes of JSON (``CLIENT_PAYLOAD_CAP``).  A larger
payload is *trimmed* to the fields downstream workflows read (``KEEP``: action, number,
label, pull_request.{number, html_url, title, state, merged, head.{sha, ref}, base.{sha,
ref}, labels[].name}, repository.full_name, before/after/ref, head_commit.id, check_run.{id,
name, head_sha, external_id}, sender.login) and marked ``payload._trimmed = {"original_bytes":
N}``; if even that is too large ``TrimError`` is raised — the dispatch is recorded ``failed``
with the reason, never silently dropped.
"""

from __future__ import annotations

import json
from typing import Any

from relay.errors import TrimError

__all__ = ["CLIENT_PAYLOAD_CAP", "KEEP", "TrimError", "build_client_payload", "trim_payload",
           "json_size"]

CLIENT_PAYLOAD_CAP = 65_536  # bytes of serialized client_payload (GitHub: 65 KB)

#: Paths kept when trimming; ``[]`` after a key means "each element of this list".
KEEP: tuple[str, ...] = (
    "action", "number", "label.name",
    "pull_request.number", "pull_request.html_url", "pull_request.title", "pull_request.state",
    "pull_request.merged", "pull_request.head.sha", "pull_request.head.ref",
    "pull_request.base.sha", "pull_request.base.ref", "pull_request.labels[].name",
    "repository.full_name", "before", "after", "ref", "deleted", "head_commit.id",
    "check_run.id", "check_run.name", "check_run.head_sha", "check_run.external_id",
    "sender.login",
)


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON (how httpx sends it)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def _copy_path(src: Any, dst: dict[str, Any], parts: list[str]) -> None:
    if not isinstance(src, dict):
        return
    head, rest = parts[0], parts[1:]
    as_list = head.endswith("[]")
    key = head[:-2] if as_list else head
    if key not in src:
        return
    value = src[key]
    if not rest:
        dst[key] = value
        return
    if as_list:
        if not isinstance(value, list):
            return
        items = dst.setdefault(key, [{} for _ in value])
        for item_src, item_dst in zip(value, items, strict=False):
            _copy_path(item_src, item_dst, rest)
        return
    _copy_path(value, dst.setdefault(key, {}), rest)


def trim_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``payload`` holding only the ``KEEP`` paths."""
    out: dict[str, Any] = {}
    for path in KEEP:
        _copy_path(payload, out, path.split("."))
    return out


def build_client_payload(event_type: str, delivery_id: str, payload: dict[str, Any],
                         callback: dict[str, str] | None = None,
                         cap: int = CLIENT_PAYLOAD_CAP) -> tuple[dict[str, Any], int | None]:
    """``(client_payload, trimmed_from)``: ``trimmed_from`` is the original size in bytes when
    trimming was needed, else ``None``.  Raises ``TrimError`` when trimming is not enough."""
    body: dict[str, Any] = {"event_type": event_type, "delivery_id": delivery_id,
                            "payload": payload}
    if callback:
        body["callback"] = callback
    size = json_size(body)
    if size <= cap:
        return body, None
    trimmed = trim_payload(payload)
    trimmed["_trimmed"] = {"original_bytes": size, "kept": list(KEEP)}
    body["payload"] = trimmed
    if json_size(body) > cap:
        raise TrimError(f"client_payload is {json_size(body)} bytes after trimming "
                        f"(cap {cap}; original {size})")
    return body, size
