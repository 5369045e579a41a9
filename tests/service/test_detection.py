"""Detection time per upstream commit: arrival → verdict posted, split into queue, selection,
execution and reporting; P50/P95 per day next to CRCR's L3 thresholds; on the readiness page."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update

from relay.domain.run import Run
from relay.service import create_app
from relay.service.detection import THRESHOLDS, detection, percentile
from relay.settings import Settings
from relay.store import insert_delivery, make_engine, make_session_factory
from relay.store.db import create_schema
from relay.store.hud_results import store_hud_result
from relay.store.runs import save_run
from relay.store.tables import DeliveryRecord, HudResultRecord
from tests.fakes.live import LiveServer
from tests.service.test_page_browser import CHROMIUM, load

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
S = timedelta(seconds=1)


def _sample(session, n: int, arrived: datetime, queue: float, selection: float, execution: float,
            reporting: float | None, *, posted_twice: bool = False) -> None:
    """One webhook delivery and its run; its HUD body posted ``reporting`` s after the run ended."""
    did, head = f"d-{n}", f"{n:02d}" * 20
    insert_delivery(session, delivery_id=did, event="push", payload="{}")
    session.execute(update(DeliveryRecord).where(DeliveryRecord.delivery_id == did).values(received_at=arrived))
    started = arrived + queue * S
    selected, finished = started + selection * S, started + (selection + execution) * S
    save_run(session, Run(id=f"run-{n}", base="b" * 40, head=head, trigger="webhook", delivery_id=did,
                          started_at=started, selected_at=selected, finished_at=finished, conclusion="success"))
    if reporting is None:
        return
    for k in range(2 if posted_twice else 1):  # a second post of the same job keeps the first receipt
        store_hud_result(session, delivery_id=did, repo="spyre-sim", run_id=f"run-{n}", attempt=1,
                         job_name="spyre-sim", status="completed", conclusion="success", body={})
        if k == 0:
            session.execute(update(HudResultRecord).where(HudResultRecord.run_id == f"run-{n}")
                            .values(received_at=finished + reporting * S))
            session.commit()


@pytest.fixture
def filled(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    engine = make_engine(url)
    create_schema(engine)
    sf = make_session_factory(engine)
    day1, day2 = NOW - timedelta(days=1, hours=2), NOW - timedelta(hours=3)
    with sf() as s:
        _sample(s, 1, day1, 5, 2.5, 60, 0.25)
        _sample(s, 2, day1 + timedelta(minutes=10), 40, 3, 120, 1.5, posted_twice=True)
        _sample(s, 3, day2, 2000, 4, 90, 0.5)
        _sample(s, 4, day2 + timedelta(minutes=5), 1, 1, 30, None)  # no verdict posted yet
        s.commit()
    yield url, sf
    engine.dispose()


def test_each_commit_splits_into_stages_that_add_up_and_days_get_p50_p95(filled) -> None:
    _url, sf = filled
    with sf() as s:
        d = detection(s, "spyre-sim", now=NOW)
    rows = {c["run_id"]: c for c in d["commits"]}
    assert set(rows) == {"run-1", "run-2", "run-3"} and d["unreported"] == 1
    assert rows["run-2"] == {**rows["run-2"], "queue_ms": 40_000, "selection_ms": 3_000, "execution_ms": 120_000,
                             "reporting_ms": 1_500, "total_ms": 164_500, "commit": "02" * 20}
    for c in d["commits"]:
        assert c["total_ms"] == sum(c[k] for k in d["stages"])
        posted = datetime.fromisoformat(c["posted_at"]) - datetime.fromisoformat(c["received_at"])
        assert c["total_ms"] == round(posted.total_seconds() * 1000)  # arrival → verdict posted
    assert [x["day"] for x in d["days"]] == ["2026-12-05", "2026-12-06"]
    first = d["days"][0]
    assert first["commits"] == 2 and first["p50_queue_ms"] == 5_000 and first["p95_queue_ms"] == 40_000
    assert first["p50_total_ms"] == 67_750 and first["p95_total_ms"] == 164_500
    assert d["days"][1]["p50_queue_ms"] == d["days"][1]["p95_queue_ms"] == 2_000_000
    # CRCR L3: queue P50 < 30 min, end-to-end P50 < 3 h
    assert d["thresholds"] == THRESHOLDS and d["p50_queue_ms"] == 40_000 and d["meets_l3"] is True
    assert percentile([1, 2, 3, 4], 50) == 2 and percentile([1, 2, 3, 4], 95) == 4 and percentile([], 50) is None


def test_a_slow_queue_fails_the_l3_threshold(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'r.db'}")
    create_schema(engine)
    with make_session_factory(engine)() as s:
        _sample(s, 7, NOW - timedelta(hours=1), 31 * 60, 1, 1, 1)
        d = detection(s, "spyre-sim", now=NOW)
    assert d["p50_queue_ms"] > THRESHOLDS["p50_queue_ms"] and d["meets_l3"] is False
    engine.dispose()


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium absent: apt-get install -y chromium")
def test_the_detection_panel_in_a_browser_adds_up_to_the_stages(filled, tmp_path: Path) -> None:
    url, _sf = filled
    app = create_app(Settings(state_dir=tmp_path / "state", database_url=url), webhooks_enabled=False)
    server = LiveServer(app).start()
    try:
        data = httpx.get(f"{server.url}/api/v1/backends/spyre-sim/readiness").json()["detection"]
        dom = load(f"{server.url}/backends/spyre-sim/readiness", tmp_path, "readiness-detection", height=1300)
    finally:
        server.stop()
    assert [c["run_id"] for c in data["commits"]] == ["run-3", "run-2", "run-1"]
    panel = dom.split('id="detection"', 1)[1].split("</section>", 1)[0]
    rows = re.findall(r'<tr data-run="([^"]+)">(.*?)</tr>', panel, re.S)
    assert [r for r, _ in rows] == ["run-3", "run-2", "run-1"]
    for run_id, row in rows:
        shown = {k: Decimal(v) for k, v in re.findall(r'data-stage="(\w+)">([\d.]+) s<', row)}
        assert len(shown) == 5 and shown.pop("total_ms") == sum(shown.values()), (run_id, shown)
        json_row = next(c for c in data["commits"] if c["run_id"] == run_id)
        assert {k: v * 1000 for k, v in shown.items()} == {k: json_row[k] for k in shown}
    day = re.search(r'<tr data-day="2026-12-05">(.*?)</tr>', panel, re.S).group(1)
    assert "<td class=\"num\">2</td>" in day and "5.000 s / 40.000 s" in day  # queue P50 / P95
    assert "1 run without a verdict posted yet" in panel and 'id="l3-queue">30.0 min' in panel  # CRCR L3
