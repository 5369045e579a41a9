"""One test over time, and the search across recent runs.

``history_json`` is ``GET /api/v1/tests/history?test=ID`` (an item id or its generic upstream
name, newest run first); ``test_view`` adds what the test page draws: the outcomes counted, the
quarantine state and an SVG chart of the history, oldest → newest, bar height = duration (ms),
colour = outcome.  ``search_json`` is ``GET /api/v1/tests?test=&op=&verdict=``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy.orm import Session

from relay.service.queries.charts import bar_chart
from relay.store.grid import SEARCH_RUNS, search_results
from relay.store.history import test_history
from relay.store.quarantine import quarantine_json

__all__ = ["history_json", "test_view", "search_json", "fmt_ms"]


def fmt_ms(value: float | None) -> str:
    """Milliseconds for a reader: ``850 ms``, ``2.5 s``, ``3.1 min``, ``1.2 h``; ``–`` for none."""
    if value is None:
        return "–"
    if value >= 3_600_000:
        return f"{value / 3_600_000:.1f} h"
    if value >= 60_000:
        return f"{value / 60_000:.1f} min"
    if value >= 1000:
        return f"{value / 1000:.1f} s"
    return f"{value:.0f} ms"


def history_json(session: Session, test: str, limit: int) -> dict[str, Any]:
    """``{"test", "history": [{run_id, head, started_at, backend, test_id, outcome, duration_ms,
    attempts, message, detail}]}``, newest first."""
    return {"test": test, "history": test_history(session, test, limit)}


def test_view(session: Session, test: str, limit: int) -> dict[str, Any]:
    """``history_json`` plus ``counts`` per outcome, ``quarantine`` (the test's row or ``None``),
    ``ids`` (the item ids seen: a generic name has several) and ``chart``."""
    history = test_history(session, test, limit)
    points = [{**h, "label": f"{h['head'][:12]} · {h['outcome']}", "href": f"/runs/{h['run_id']}"}
              for h in reversed(history)]
    states = quarantine_json(session)
    ids = sorted({h["test_id"] for h in history})
    return {"test": test, "history": history, "counts": dict(Counter(h["outcome"] for h in history)),
            "ids": ids, "quarantine": next((states[i] for i in ids if i in states), None),
            "chart": bar_chart(points, value="duration_ms", fmt=fmt_ms, css="outcome", href="href")}


test_view.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def search_json(session: Session, *, test: str | None, op: str | None, verdict: str | None,
                limit: int) -> dict[str, Any]:
    """``{"query": {test, op, verdict}, "runs_searched", "tests": [latest result per test]}``
    (``relay.store.grid.search_results``)."""
    found = search_results(session, test=test, op=op, verdict=verdict, limit=limit)
    return {"query": {"test": test, "op": op, "verdict": verdict}, "runs_searched": SEARCH_RUNS,
            "tests": found}
