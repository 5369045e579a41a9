"""What ``relay select`` says is what every path runs (issue 18): one change and one spec through
``relay select``, ``relay replay``, a webhook over loopback to an in-process relay, and a webhook
to a relay whose runs go to a ``relay worker`` as Celery shards (Redis + PostgreSQL) — the same
mode per test and the same conclusion on all four.

The spec lists every op as must-pass; stage 3 predicts ``index_put`` (no Spyre kernel for
``aten::_index_put_impl_``) as ``xfail`` and keeps ``matmul`` must-pass (its ``aten::squeeze_``
decomposes above the device, so it is no refusal: ``spyre_backend.support.decomposes_above_device``).
Before the fix, replay ran index_put as ``mandatory_success`` and it failed the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from relay.service import create_app
from relay.settings import Settings
from relay.store import get_delivery, list_runs, load_run, make_engine, make_session_factory
from tests.distributed.conftest import tiny_spec
from tests.fakes.github import WebhookSender, push_payload

pytestmark = pytest.mark.timeout(600)
SECRET = "stage3-modes-secret-1234"
FILES = ["aten/src/ATen/native/TensorAdvancedIndexing.cpp", "aten/src/ATen/native/LinearAlgebra.cpp",
         "aten/src/ATen/native/BinaryOps.cpp"]
BEFORE, AFTER = "a" * 40, "b" * 40
PREDICTED = {"must::TestCommon::test_compare_cpu[index_put-float16]": "xfail",
             # a name-only LinearAlgebra.cpp selects matmul's own OpInfo (the file defines matmul)
             "must::TestCommon::test_compare_cpu[matmul-float16]": "mandatory_success",
             "must::TestCommon::test_compare_cpu[add-float16]": "mandatory_success"}


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    relay_bin = str(Path(sys.executable).parent / "relay")
    return subprocess.run([relay_bin, *args], env={**os.environ, **env}, cwd=cwd,
                          capture_output=True, text=True, timeout=500)


def _webhook_run(settings: Settings, live_server, delivery_id: str, before_wait=None):
    """Send the push to a relay built from ``settings``; the stored run once processed."""
    app = create_app(settings)
    server = live_server(app)
    if before_wait is not None:
        before_wait()
    sender = WebhookSender(server.url, SECRET)
    try:
        payload = push_payload(before=BEFORE, after=AFTER,
                               commits=[{"added": [], "removed": [], "modified": FILES}])
        assert sender.send("push", payload, delivery_id=delivery_id).status_code == 202
    finally:
        sender.close()
    engine = make_engine(settings.database_url)
    sf = make_session_factory(engine)
    deadline = time.monotonic() + 400
    try:
        while True:
            with sf() as s:
                row = get_delivery(s, delivery_id)
            if row.status in ("processed", "failed"):
                break
            assert time.monotonic() < deadline, row.status
            time.sleep(0.3)
        assert row.status == "processed", row.error
        with sf() as s:
            [run_id] = [r.id for r in list_runs(s) if r.delivery_id == delivery_id]
            return load_run(s, run_id)
    finally:
        engine.dispose()


def test_select_replay_webhook_and_celery_run_the_same_modes(tmp_path: Path, dist_env, start_worker,
                                                             live_server, monkeypatch) -> None:
    spec = tmp_path / "must.yaml"
    assert tiny_spec(spec, ["index_put", "matmul", "add"]) == sorted(PREDICTED)  # all must-pass
    change = tmp_path / "change.json"
    change.write_text(json.dumps({"base": BEFORE, "head": AFTER, "files": [{"filename": f} for f in FILES]}))
    state = tmp_path / "state"  # one index cache for every path
    local = {"RELAY_STATE_DIR": str(state), "RELAY_DATABASE_URL": f"sqlite:///{tmp_path / 'replay.db'}"}

    selected = _cli(["select", str(change), "--spec", str(spec), "--json"], local, tmp_path)
    assert selected.returncode == 0, selected.stderr[-3000:]
    select_modes = {t["id"]: t["mode"] for t in json.loads(selected.stdout)["selected"]}
    assert select_modes == PREDICTED

    replayed = _cli(["replay", str(change), "--spec", str(spec), "--json"], local, tmp_path)
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    replay = json.loads(replayed.stdout)
    replay_modes = {r["id"]: r["mode"] for r in replay["results"]}
    outcomes = {r["id"]: r["outcome"] for r in replay["results"]}
    assert outcomes["must::TestCommon::test_compare_cpu[index_put-float16]"] == "xfailed"
    assert replay["conclusion"] == "success"

    monkeypatch.setenv("RELAY_SPECS", str(spec))
    in_process = _webhook_run(Settings(webhook_secret=SECRET, state_dir=state,
                                       database_url=f"sqlite:///{tmp_path / 'hook.db'}",
                                       specs=str(spec)), live_server, "modes-local")

    env = {**dist_env, "RELAY_SPECS": str(spec), "RELAY_STATE_DIR": str(state)}
    for key in ("RELAY_CELERY_QUEUE", "RELAY_SHARD_SIZE", "RELAY_SPECS"):
        monkeypatch.setenv(key, env[key])
    celery = _webhook_run(Settings(webhook_secret=SECRET, state_dir=state,
                                   database_url=env["RELAY_DATABASE_URL"],
                                   broker_url=env["RELAY_BROKER_URL"], specs=str(spec)),
                          live_server, "modes-celery",
                          before_wait=lambda: start_worker(env, "modes", concurrency=1))

    for run in (in_process, celery):
        assert {t.id: t.mode for t in run.selection} == select_modes
        assert {r.id: r.mode for r in run.results} == replay_modes == PREDICTED
        assert {r.id: r.outcome for r in run.results} == outcomes
        assert run.conclusion == replay["conclusion"]
    xfail = next(r for r in celery.results if r.id.endswith("[index_put-float16]"))
    assert xfail.outcome == "xfailed"
