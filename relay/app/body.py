"""Reading a request body with a byte cap: ``Content-Length`` first, then the bytes received."""

from __future__ import annotations

from fastapi import HTTPException, Request

__all__ = ["read_capped"]


async def read_capped(request: Request, cap: int) -> bytes:
    """The raw body; raises ``HTTPException`` 413 when over ``cap`` bytes (declared or actual)
    and 400 for a non-numeric ``Content-Length``.  Stops reading as soon as the cap is passed."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise HTTPException(400, "invalid Content-Length header") from None
        if size > cap:
            raise HTTPException(413, f"body of {size} bytes exceeds the {cap}-byte limit")
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > cap:
            raise HTTPException(413, f"body exceeds the {cap}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)
