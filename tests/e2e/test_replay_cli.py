"""``relay replay`` end to end: a ChangeSet in, tests run on spyre, the run stored and reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relay.settings import get_settings
from relay.store import list_hud_results, load_run, make_engine, make_session_factory
from tests.spec_text import compare_cpu_spec

SPEC = compare_cpu_spec(["add", "nn.functional.gelu", "mul"], extra="""\
        - names: [TestCommon::test_compare_cpu]
          mode: xfail
          reason: aten::_index_put_impl_ has no Spyre kernel
          issue: spyre_backend/support.yaml
          edits:
            ops:
              include: [{name: index_put}]
""")

CHANGE = {
    "upstream": "pytorch/pytorch", "base": "aaaa", "head": "bbbb", "title": "gelu and index_put",
    "files": [
        {"filename": "torch/nn/functional.py", "status": "modified", "symbols": ["gelu"]},
        {"filename": "torch/include/ATen/ops/index_put_native.h", "status": "modified"},
        {"filename": "docs/source/index.rst", "status": "modified"},
    ],
}


def relay(*args: str, state: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RELAY_STATE_DIR": str(state), "COLUMNS": "200"}
    env.pop("RELAY_DATABASE_URL", None)
    env.pop("RELAY_DASHBOARD_URL", None)
    return subprocess.run([sys.executable, "-m", "relay.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_replay_selects_runs_stores_and_reports(tmp_path: Path) -> None:
    spec = tmp_path / "mini.yaml"
    spec.write_text(SPEC)
    change = tmp_path / "change.json"
    change.write_text(json.dumps(CHANGE))
    state = tmp_path / "state"
    proc = relay("replay", str(change), "--spec", str(spec), "--json", state=state, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = json.loads(proc.stdout)
    # selection: gelu (by symbol) and index_put (by per-op header); add and mul not touched
    assert [s["name"] for s in run["stages"]] == ["scope", "memory", "classify", "refine"]
    scope, memory, classify, refine = run["stages"]
    assert scope["in"] == 4 and scope["out"] == 4 and memory["out"] == 2
    ids = {r["id"]: r for r in run["results"]}
    assert set(ids) == {"mini::TestCommon::test_compare_cpu[nn.functional.gelu-float16]",
                        "mini::TestCommon::test_compare_cpu[index_put-float16]"}
    assert ids["mini::TestCommon::test_compare_cpu[nn.functional.gelu-float16]"]["outcome"] == "passed"
    assert ids["mini::TestCommon::test_compare_cpu[index_put-float16]"]["outcome"] == "xfailed"
    # no environments: the tests ran on the installed torch, and the output and the run say so
    from importlib.metadata import version

    assert run["environments"]["head"]["name"] == "current" and "base" not in run["environments"]
    assert f"head ran on torch {version('torch')} (current — the installed torch" in proc.stderr
    assert "no base run: bbbb is only the change's label; add --head-env ENV --base-env ENV" in proc.stderr
    assert run["counts"]["passed"] == 1 and run["counts"]["xfailed"] == 1
    assert run["conclusion"] == "success"
    # the run's own marks split it into selection and execution (detection time), stored as such
    assert run["started_at"] < run["selected_at"] < run["finished_at"]
    # human summary on stderr, JSON alone on stdout
    assert "selection (universe 4)" in proc.stderr and "passed" in proc.stderr
    # stored in the default SQLite database, and posted to the dashboard ingest route
    settings = get_settings(state_dir=state)
    engine = make_engine(settings.database_url)
    try:
        with make_session_factory(engine)() as session:
            stored = load_run(session, run["id"])
            hud = list_hud_results(session)
    finally:
        engine.dispose()
    assert stored.counts == run["counts"] and len(stored.results) == 2
    assert stored.selected_at is not None and stored.selected_at.isoformat().startswith(run["selected_at"][:19])
    assert any(h.delivery_id == f"replay-{run['id']}" for h in hud)
    assert (state / "runs" / run["id"] / "attempt-1" / "junit.xml").exists()


@pytest.mark.parametrize(("content", "expected"), [
    (None, "no such file"),
    ('{"base": "a",\n "head": ', "2:10: invalid JSON"),
    ('{"base": "a", "head": "b", "files": [{"status": "modified"}]}', "files.0.filename: Field required"),
])
def test_replay_bad_input_is_a_clear_error(tmp_path: Path, content: str | None, expected: str) -> None:
    change = tmp_path / "change.json"
    if content is not None:
        change.write_text(content)
    proc = relay("replay", str(change), state=tmp_path / "state", cwd=tmp_path)
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr
