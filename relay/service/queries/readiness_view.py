"""The readiness page's view of ``relay.service.readiness.readiness`` (``GET
/backends/{name}/readiness``): each L3 criterion in words with its measured value, and the
weekly trend of each as a bar chart with the criterion as a dashed line.

CRCR's ratified L3 criteria (design §6): ≥ 1 month at L2, weekly job success > 90 %, end-to-end
P50 < 3 h, < 1 % of jobs over 3 h in 14 days, queue (P50) < 30 min.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from relay.service.queries.charts import bar_chart
from relay.service.queries.tests import fmt_ms
from relay.service.readiness import L3_CRITERIA

__all__ = ["readiness_view", "CRITERIA_TEXT"]


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v * 100:.1f} %"


#: criterion name -> (what it asks, how its value reads)
CRITERIA_TEXT = {
    "days_at_l2": ("at least 30 days at L2 (days since the first recorded job)", lambda v: f"{v:.1f} days"),
    "success_rate_7d": ("weekly job success above 90 %", _pct),
    "p50_e2e_ms": ("end-to-end time (queue + execution), median, under 3 h", fmt_ms),
    "share_over_3h_14d": ("under 1 % of jobs over 3 h in the last 14 days", _pct),
    "p50_queue_ms": ("queue time, median, under 30 min", fmt_ms),
}

_TRENDS = (("success_rate", "weekly success rate", _pct, L3_CRITERIA["success_rate_7d"], "> 90 %", 1.0),
           ("p50_e2e_ms", "P50 end-to-end", fmt_ms, L3_CRITERIA["p50_e2e_ms"], "< 3 h", None),
           ("share_over_3h", "jobs over 3 h (overruns)", _pct, L3_CRITERIA["share_over_3h_14d"], "< 1 %", None),
           ("p50_queue_ms", "P50 queue time", fmt_ms, L3_CRITERIA["p50_queue_ms"], "< 30 min", None))


def seconds(ms: float | None) -> str:
    """Whole milliseconds as seconds with three decimals (``12.345 s``), so a row of stage times
    adds up to its total digit for digit; ``–`` for none."""
    return "–" if ms is None else f"{ms / 1000:.3f} s"


def readiness_view(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (the readiness JSON) plus ``criteria_text`` rows ``{name, asks, value, ok}`` and
    ``trends`` ``[{key, title, chart, latest}]``, one bar per week (oldest left); the detection
    panel's times read through ``seconds``."""
    rows = [{"name": c["name"], "asks": CRITERIA_TEXT.get(c["name"], (c["name"], str))[0],
             "value": "–" if c["value"] is None else CRITERIA_TEXT.get(c["name"], ("", str))[1](c["value"]),
             "threshold": c["threshold"], "ok": c["ok"]} for c in data["criteria"]]
    weeks = [{**w, "label": f"week of {datetime.fromisoformat(w['week_start']):%b %d} · {w['jobs']} jobs"}
             for w in data.get("weekly", [])]
    trends = []
    for key, title, fmt, threshold, text, ceiling in _TRENDS:
        chart = bar_chart([{**w, "cls": "ok"} for w in weeks], value=key, fmt=fmt, css="cls",
                          threshold=threshold, threshold_label=f"L3: {text}", ceiling=ceiling, width=300, height=90)
        trends.append({"key": key, "title": title, "chart": chart, "threshold": text,
                       "latest": fmt(next((w[key] for w in reversed(weeks) if w[key] is not None), None))})
    return {**data, "criteria_text": rows, "trends": trends, "seconds": seconds, "fmt_ms": fmt_ms}
