"""Chart labels never overlap the bars or each other (``relay.service.queries.charts``): the
"max" label has a band above every bar, the axis labels a band below, and a one-point chart
names its point once."""

from __future__ import annotations

from relay.service.queries.charts import AXIS_BAND, LABEL_BAND, bar_chart


def test_bars_stay_between_the_label_bands() -> None:
    points = [{"label": f"2026-W{w}", "v": v} for w, v in ((45, 0.2), (46, 1.0), (47, None), (48, 0.7))]
    chart = bar_chart(points, value="v", fmt=lambda v: f"{v}", threshold=0.9, ceiling=1.0, height=110)
    tallest = max(chart["bars"], key=lambda b: b["h"])
    assert tallest["y"] == LABEL_BAND  # the top of the scale ends under the "max" label's band
    for bar in chart["bars"]:
        assert bar["y"] >= LABEL_BAND and bar["y"] + bar["h"] <= chart["height"] - AXIS_BAND + 0.1
    assert LABEL_BAND <= chart["threshold"]["y"] <= chart["height"] - AXIS_BAND
    assert (chart["first"], chart["last"]) == ("2026-W45", "2026-W48")


def test_one_point_is_labelled_once() -> None:
    chart = bar_chart([{"label": "2026-W48", "v": 3.0}], value="v", fmt=str)
    assert (chart["first"], chart["last"]) == ("2026-W48", "")
