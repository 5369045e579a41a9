"""Server-side HTML for the dashboard pages: one Jinja2 environment over
``relay/service/templates`` (autoescaped — every title, test id, message and error from a
webhook, a spec or a test run is escaped), its filters, and ``render``.

No build step and no framework: each page is a template extending ``_base.html``; the only
JavaScript is the auto-refresh of pages that show running work (``_base.html``: while the page
says ``live``, its ``<main>`` is re-fetched every ``REFRESH_S`` seconds when the tab is visible).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from relay.service.deps import get_state
from relay.service.queries.common import CONCLUSION_CHAR, LEVELS, VERDICT_ORDER, is_sha
from relay.service.queries.tests import fmt_ms

__all__ = ["render", "env", "REFRESH_S", "cut_words", "plural"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
#: seconds between refreshes of a page showing running work
REFRESH_S = 5

env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]),
                  undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _when(value: Any) -> str:
    """An ISO string or datetime as ``2026-12-01 10:04 UTC``; ``–`` for none."""
    if not value:
        return "–"
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _pct(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value * 100:.{digits}f} %"


def _safe_url(value: str | None) -> str | None:
    """``value`` when it is an http(s) URL (a link from a callback must not run script)."""
    return value if value and value.startswith(("https://", "http://")) else None


def _q(value: Any) -> str:
    """A path segment or query value, percent-encoded (``/`` too)."""
    return quote(str(value), safe="")


def cut_words(value: Any, limit: int) -> str:
    """``value`` cut to at most ``limit`` characters at a word boundary, ``…`` appended when
    cut (a word longer than ``limit`` is cut inside itself, the only way to stay in bounds)."""
    text = " ".join(str(value or "").split())
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:") + " …"


def plural(count: Any, word: str, many: str | None = None) -> str:
    """``1 job`` / ``2 jobs`` (``many``: an irregular plural, ``1 delivery`` / ``2 deliveries``)."""
    n = int(count or 0)
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


env.filters.update(ms=fmt_ms, plural=plural, when=_when, pct=_pct, safe_url=_safe_url, q=_q, cut_words=cut_words,
                   short=lambda s: str(s)[:12] if is_sha(s) else str(s))
env.tests["sha"] = is_sha
env.globals.update(CHAR=CONCLUSION_CHAR, LEVELS=LEVELS, REFRESH_S=REFRESH_S, VERDICTS=VERDICT_ORDER)


def render(request: Request, template: str, *, status: int = 200, live: bool = False,
           json_url: str | None = None, **context: Any) -> HTMLResponse:
    """``template`` rendered with ``context`` plus ``settings``, ``now`` (UTC), ``live`` (the page
    refreshes itself) and ``json_url`` (the page's JSON twin, linked in its footer)."""
    settings = get_state(request).settings
    html = env.get_template(template).render(settings=settings, upstream=settings.upstream_repo,
                                             backend=settings.backend, now=datetime.now(UTC),
                                             live=live, json_url=json_url, path=request.url.path,
                                             **context)
    return HTMLResponse(html, status_code=status)
