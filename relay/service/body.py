"""Reading a request body with a byte cap: ``Content-Length`` first, then the bytes received.

One implementation at the ASGI level (``read_body``, used by the raw webhook intake) and its
FastAPI wrapper (``read_capped``, used by the ingest and callback routes).
"""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException, Request

from relay.errors import BodyRefused

__all__ = ["BodyRefused", "read_body", "read_capped"]


async def read_body(receive: Any, declared: str | None, cap: int) -> bytes:
    """The body from an ASGI ``receive``; raises ``BodyRefused`` 413 over ``cap`` bytes
    (declared or received, stopping at the first chunk past the cap) and 400 for a non-numeric
    ``Content-Length`` or a client that disconnects."""
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise BodyRefused(400, "invalid Content-Length header") from None
        if size > cap:
            raise BodyRefused(413, f"body of {size} bytes exceeds the {cap}-byte limit")
    chunks: list[bytes] = []
    received = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BodyRefused(400, "client disconnected")
        chunk = message.get("body", b"")
        received += len(chunk)
        if received > cap:
            raise BodyRefused(413, f"body exceeds the {cap}-byte limit")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def read_capped(request: Request, cap: int) -> bytes:
    """``read_body`` for a FastAPI request; raises ``HTTPException`` with the same status."""
    try:
        return await read_body(request.receive, request.headers.get("content-length"), cap)
    except BodyRefused as exc:
        raise HTTPException(exc.status, exc.detail) from None
