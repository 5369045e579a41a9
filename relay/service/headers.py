"""Security headers on every response the FastAPI app serves (pages, JSON, files).

What a security review of a dashboard expects (OWASP Secure Headers; MDN's CSP guide):

- ``Content-Security-Policy``: scripts only from this origin (no inline script: the one script,
  the pages' auto-refresh, is ``/static/refresh.js``), no plug-ins, forms and fetches to this
  origin only, ``frame-ancestors 'none'`` (no clickjacking).  Inline ``style`` stays allowed: the
  pages carry their stylesheet and a few computed widths (progress bars) inline, and CSS cannot
  run script;
- ``X-Content-Type-Options: nosniff``: a patch, a log or a failure output is never sniffed into
  HTML and run;
- ``X-Frame-Options: DENY`` for browsers older than ``frame-ancestors``;
- ``Referrer-Policy: same-origin``: links out to GitHub do not carry the dashboard's URLs.

A pure ASGI middleware (headers added at ``http.response.start``; a header the route set itself
wins).  ``POST /webhooks/github`` is answered before any middleware (``relay.service.intake``)
and answers only JSON to GitHub.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SecurityHeaders", "SECURITY_HEADERS", "CSP"]

CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
       "frame-ancestors 'none'")
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
)


class SecurityHeaders:
    """ASGI middleware adding ``SECURITY_HEADERS`` to every HTTP response of ``app``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers.extend(h for h in SECURITY_HEADERS if h[0] not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
