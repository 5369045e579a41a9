"""Small inline SVG charts, computed here and drawn by the templates (``_charts.html``) with no
JavaScript: bars in a fixed box, one per point, optionally a dashed threshold line.

Geometry only — the template escapes every label and title.  Units are whatever the caller
gives; ``fmt`` turns a value into the label of its bar's tooltip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["bar_chart"]


#: pixels above the bars (the "max" label) and below them (the first / last point's label)
LABEL_BAND, AXIS_BAND = 12, 14


def bar_chart(points: Sequence[dict[str, Any]], *, value: str, fmt: Callable[[float | None], str],
              label: str = "label", css: str | None = None, href: str | None = None,
              threshold: float | None = None, threshold_label: str = "", ceiling: float | None = None,
              width: int = 640, height: int = 110) -> dict[str, Any]:
    """Bars for ``points`` (in drawing order, left → right): height ∝ ``point[value]`` (``None``:
    an empty slot), class ``point[css]``, link ``point[href]``, tooltip ``"<label>: <fmt(value)>"``.
    The scale tops at the largest of the values and ``threshold`` × 1.15 — or, given a
    ``ceiling`` (1.0 for a share), at the ceiling unless a value exceeds it."""
    values = [p.get(value) for p in points]
    top = max([v for v in values if v is not None] + [(threshold or 0) * 1.15, 1e-9])
    if ceiling is not None:  # a share: the scale is the ceiling (100 %) unless a value exceeds it
        top = max([v for v in values if v is not None] + [ceiling])
    # a band above the bars for the "max" label and one below for the axis labels, so no label
    # is drawn over a bar (a bar at the top of the scale would hide "max ...")
    inner = height - LABEL_BAND - AXIS_BAND
    slot = width / max(1, len(points))
    bars = []
    for i, (p, v) in enumerate(zip(points, values, strict=True)):
        h = 0.0 if v is None else max(1.5, inner * v / top)
        bars.append({"x": round(i * slot + 1, 1), "w": round(max(1.0, slot - 2), 1),
                     "y": round(LABEL_BAND + inner - h, 1),
                     "h": round(h, 1), "cls": p.get(css) if css else None, "href": p.get(href) if href else None,
                     "title": f"{p.get(label, '')}: {fmt(v)}", "empty": v is None})
    line = None
    if threshold is not None:
        line = {"y": round(LABEL_BAND + inner - inner * threshold / top, 1), "label": threshold_label}
    # one point: its label once, not at both ends
    return {"width": width, "height": height, "inner": inner, "bars": bars, "threshold": line,
            "top": fmt(top), "first": points[0].get(label, "") if points else "",
            "last": points[-1].get(label, "") if len(points) > 1 else ""}
