"""The dashboard pages in a real headless Chromium (Debian's ``/usr/bin/chromium``; no build step,
server-side HTML), against a database filled by real replays: ``relay replay`` of a softmax
change with a simulated regression on head (a NEW failure, a baseline run on the base commit)
and of a second change on the next commit, on two small op_db specs (two spec groups).

Each page is loaded with ``--dump-dom`` (the DOM after scripts ran) and saved as a screenshot
under ``$RELAY_TEST_ARTIFACTS`` (default ``results/screenshots``, git-ignored); with
``RELAY_README_SCREENSHOTS=docs/screenshots`` the grid and a run page are also written there
for the README.  Skips when Chromium is absent: ``apt-get install -y chromium`` (``.ci/run``
does).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from filelock import FileLock

from relay.service import create_app
from relay.settings import Settings
from relay.store import insert_delivery, make_engine, make_session_factory, mark_delivery
from relay.store.progress import write_progress
from tests.e2e.test_replay_cli import relay as relay_cli
from tests.fakes.github import pull_request_payload
from tests.fakes.live import LiveServer

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="/usr/bin/chromium absent: apt-get install -y chromium (.ci/run installs it)")
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("RELAY_TEST_ARTIFACTS") or ROOT / "results" / "screenshots")
TITLE = '<script>alert("t")</script> softmax: a faster kernel'
HEAD_A, BASE_A, HEAD_B, HEAD_C = "a1" * 20, "b0" * 20, "c2" * 20, "d3" * 20


def _spec(ops: list[str], template: str, *, exclude: list[str] = (), xfail: str | None = None) -> str:
    edits: dict = {"ops": {"include": [{"name": o} for o in ops]}}
    if exclude:
        edits["ops"]["exclude"] = [{"name": o} for o in exclude]
    tests = [{"names": [template], "edits": edits}]
    if xfail:
        tests.append({"names": [template], "mode": "xfail", "reason": f"aten::_{xfail}_impl_ has no Spyre kernel",
                      "issue": "spyre_backend/support.yaml", "edits": {"ops": {"include": [{"name": xfail}]}}})
    return json.dumps({"test_suite_config": {
        "files": [{"source": "op_db", "unlisted_test_mode": "skip", "reason": "only these templates here",
                   "issue": "test fixture", "tests": tests}],
        "global": {"supported_dtypes": ["float16"]}}})


CHANGE_A = {"base": BASE_A, "head": HEAD_A, "title": TITLE, "files": [
    {"filename": "torch/_refs/__init__.py", "status": "modified", "symbols": ["softmax", "log_softmax"]}]}
CHANGE_B = {"base": HEAD_A, "head": HEAD_B, "title": "mul and index_put headers", "files": [
    {"filename": "torch/include/ATen/ops/mul_native.h", "status": "modified"},
    {"filename": "torch/include/ATen/ops/index_put_native.h", "status": "modified"}]}


def _replay(work: Path, change: dict, *extra: str) -> str:
    path = work / f"{change['head'][:6]}.json"
    path.write_text(json.dumps(change))
    proc = relay_cli("replay", str(path), "--spec", str(work / "specs"), "--json", *extra,
                     state=work / "state", cwd=work)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return json.loads(proc.stdout)["id"]


def _fill(work: Path) -> dict[str, str]:
    """Two real replays, then two deliveries in flight (one running with progress, one queued)."""
    (work / "specs").mkdir(parents=True)
    (work / "specs" / "core.yaml").write_text(_spec(["softmax", "add", "mul"], "TestCommon::test_compare_cpu",
                                                    exclude=["softmax.with_dtype"], xfail="index_put"))
    (work / "specs" / "extra.yaml").write_text(_spec(
        ["nn.functional.softmin", "log_softmax"], "TestCommon::test_noncontiguous_samples",
        exclude=["nn.functional.softmin.with_dtype", "log_softmax.with_dtype"]))
    runs = {"a": _replay(work, CHANGE_A, "--head-env", "current+faults=aten::_softmax:offset=0.05",
                         "--base-env", "current"),
            "b": _replay(work, CHANGE_B)}
    engine = make_engine(f"sqlite:///{work / 'state' / 'relay.db'}")
    with make_session_factory(engine)() as s:
        insert_delivery(s, delivery_id="live-1", event="pull_request", action="opened",
                        payload=json.dumps(pull_request_payload(number=321, head=HEAD_C, title="A PR waiting")))
        mark_delivery(s, "live-1", "processing")
        write_progress(s, "live-1", phase="running tests", total=4, done=1, counts={"passed": 1})
    engine.dispose()
    (work / "runs.json").write_text(json.dumps(runs))
    return runs


@pytest.fixture(scope="module")
def replayed(tmp_path_factory, worker_id) -> tuple[Path, dict[str, str]]:
    """The state directory filled once per test session (shared by xdist workers) and the ids of
    the two replayed runs."""
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent
    work = shared / "browser-replays"
    with FileLock(str(shared / "browser-replays.lock")):
        runs = json.loads((work / "runs.json").read_text()) if (work / "runs.json").exists() else _fill(work)
    return work, runs


@pytest.fixture(scope="module")
def served(replayed):
    work, runs = replayed
    app = create_app(Settings(state_dir=work / "state", database_url=f"sqlite:///{work / 'state' / 'relay.db'}"),
                     webhooks_enabled=False)
    server = LiveServer(app).start()
    yield server.url, runs
    server.stop()


def _chromium(*args: str, profile: Path) -> str:
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           "--hide-scrollbars", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def load(url: str, tmp_path: Path, name: str, *, height: int = 900, budget_ms: int = 1000) -> str:
    """The page's DOM after ``budget_ms`` of virtual time; its screenshot saved as ``name``.png."""
    dom = _chromium(f"--virtual-time-budget={budget_ms}", "--dump-dom", url, profile=tmp_path / f"dom-{name}")
    assert "<script>alert" not in dom, f"{url}: user text reached the DOM unescaped"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _chromium(f"--window-size=1280,{height}", f"--screenshot={ARTIFACTS / name}.png", url,
              profile=tmp_path / f"shot-{name}")
    return dom


def _readme_copy(name: str, as_name: str) -> None:
    target = os.environ.get("RELAY_README_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(ARTIFACTS / f"{name}.png", Path(target) / f"{as_name}.png")


def test_grid_shows_commits_by_spec_group_linked_to_runs(served, tmp_path) -> None:
    url, runs = served
    dom = load(url + "/", tmp_path, "grid", height=640)
    _readme_copy("grid", "grid")
    heads = re.findall(r'<tr data-head="(\w+)">', dom)
    assert heads[0] == HEAD_C and {HEAD_A, HEAD_B, BASE_A} <= set(heads)  # in flight first; base = baseline run
    row_a = dom.split(f'<tr data-head="{HEAD_A}">', 1)[1].split("</tr>", 1)[0]
    cells = dict(re.findall(r'data-column="([^"]+)" data-conclusion="(\w+)"', row_a))
    assert cells == {"spyre-sim": "failure", "spyre-sim/core": "failure", "spyre-sim/extra": "success"}
    assert f'href="/runs/{runs["a"]}?test=core%3A%3A"' in row_a and f'href="/runs/{runs["a"]}"' in row_a
    assert '&lt;script&gt;alert("t")&lt;/script&gt; softmax' in row_a  # the title, escaped
    row_b = dom.split(f'<tr data-head="{HEAD_B}">', 1)[1].split("</tr>", 1)[0]
    assert dict(re.findall(r'data-column="([^"]+)" data-conclusion="(\w+)"', row_b)) == {
        "spyre-sim": "success", "spyre-sim/core": "success"}
    row_c = dom.split(f'<tr data-head="{HEAD_C}">', 1)[1].split("</tr>", 1)[0]
    assert 'data-conclusion="pending"' in row_c and "#321" in row_c and 'href="/deliveries#live-1"' in row_c
    assert 'data-live="1"' in dom  # work in flight: the page refreshes itself


def test_run_page_counts_add_up_and_equal_the_json(served, tmp_path) -> None:
    url, runs = served
    for key in ("a", "b"):
        data = httpx.get(f"{url}/api/v1/runs/{runs[key]}").json()
        dom = load(f"{url}/runs/{runs[key]}", tmp_path, f"run-{key}", height=1500)
        shown = {o: int(n) for o, n in re.findall(r'<tr data-outcome="(\w+)".*?data-count="(\d+)"', dom, re.S)}
        assert shown == {o: data["counts"].get(o, 0) for o in shown} and set(shown) == set(data["counts"])
        total = int(re.search(r'id="outcomes-total">(\d+)<', dom).group(1))
        assert total == sum(shown.values()) == data["selected"] == len(data["results"])
        skipped = sum(1 for t in data["selection"] if t["mode"] == "skip")
        assert f"<b>{data['selected']}</b> run" in dom and (skipped == 0 or f"<b>{skipped}</b> classified" in dom)
        assert f'href="https://github.com/pytorch/pytorch/commit/{data["head"]}"' in dom
    _readme_copy("run-a", "run")
    run_a = httpx.get(f"{url}/api/v1/runs/{runs['a']}").json()
    dom = load(f"{url}/runs/{runs['a']}", tmp_path, "run-a-dom", height=900)
    new = [v["id"] for v in run_a["verdicts"] if v["verdict"] == "NEW"]
    assert new == ["core::TestCommon::test_compare_cpu[softmax-float16]"]
    assert "1 New Failure" in dom and '&lt;script&gt;alert("t")&lt;/script&gt;' in dom
    failure = dom.split('id="failures"', 1)[1].split('id="results"', 1)[0]
    assert new[0] in failure and "device output differs from CPU" in failure
    assert "aten::_softmax" in dom.split('id="selection"', 1)[1]  # the reasons of the selection
    assert f'href="/commits/{HEAD_A}"' in dom and f'href="/runs/{run_a["baseline_run"]}"' in dom


def test_commit_test_search_readiness_flaky_deliveries_pages(served, tmp_path) -> None:
    url, runs = served
    commit = load(f"{url}/commits/{HEAD_A}", tmp_path, "commit")
    assert f'data-run="{runs["a"]}"' in commit and f'data-run="{runs["b"]}"' in commit  # head of a, base of b
    test_id = "core::TestCommon::test_compare_cpu[softmax-float16]"
    history = httpx.get(f"{url}/api/v1/tests/history", params={"test": test_id}).json()["history"]
    page = load(f"{url}/tests/history?test={test_id.replace('[', '%5B').replace(']', '%5D')}", tmp_path, "test")
    chart = page.split('id="history-chart"', 1)[1].split("</svg>", 1)[0]
    assert chart.count("<rect") == len(history) == 2 and 'class="b-failed"' in chart and 'class="b-passed"' in chart
    search = load(f"{url}/tests?op=softmax", tmp_path, "search")
    assert f'data-test="{test_id}"' in search and "mul-float16" not in search
    ready = load(f"{url}/backends/spyre-sim/readiness", tmp_path, "readiness", height=1100)
    assert 'id="level">L2' in ready and ready.count("<svg") == 4 and "weekly job success above 90 %" in ready
    flaky = load(f"{url}/flaky", tmp_path, "flaky")
    assert 'id="quarantine"' in flaky
    deliveries = load(f"{url}/deliveries", tmp_path, "deliveries")
    processing = deliveries.split('data-section="processing"', 1)[1].split("</table>", 1)[0]
    assert "live-1" in processing and "1/4 · running tests" in processing


def test_running_work_refreshes_itself_until_done(live_server, settings, tmp_path, monkeypatch) -> None:
    """The deliveries page re-fetches itself while a run is in flight and stops once none is."""
    from relay.service.templating import env

    monkeypatch.setitem(env.globals, "REFRESH_S", 1)
    app = create_app(settings, webhooks_enabled=False)
    sf = app.state.session_factory
    with sf() as s:
        insert_delivery(s, delivery_id="busy-1", event="push", payload="{}")
        mark_delivery(s, "busy-1", "processing")
        write_progress(s, "busy-1", phase="running tests", total=4, done=1, counts={"passed": 1})
    served: list[int] = []

    @app.middleware("http")
    async def finish_after_first_view(request, call_next):  # the run ends once the page was seen
        response = await call_next(request)
        if request.url.path == "/deliveries":
            served.append(1)
            if len(served) == 1:
                with sf() as s:
                    write_progress(s, "busy-1", phase="storing", total=4, done=4, counts={"passed": 4})
                    mark_delivery(s, "busy-1", "processed")
        return response

    server = live_server(app)
    dom = load(server.url + "/deliveries", tmp_path, "deliveries-refreshed", budget_ms=8000)
    assert len(served) >= 3  # the DOM load, its refresh, the screenshot
    assert 'data-live="0"' in dom and 'data-refreshed="1"' in dom
    done = dom.split('data-section="done"', 1)[1].split("</table>", 1)[0]
    assert "busy-1" in done and 'data-section="processing"' not in dom


def test_run_page_names_the_torch_each_side_ran_on(served, tmp_path) -> None:
    """A plain replay ran on the installed torch, not on its change's head label: the page says
    so from the run JSON; a regression run names both sides' torch."""
    from importlib.metadata import version

    url, runs = served
    installed = version("torch")
    plain = httpx.get(f"{url}/api/v1/runs/{runs['b']}").json()
    assert list(plain["environments"]) == ["head"] and plain["environments"]["head"]["name"] == "current"
    assert plain["environments"]["head"]["torch_version"] == installed
    ran_on = load(f"{url}/runs/{runs['b']}", tmp_path, "run-b-torch").split('id="ran-on"', 1)[1].split("</span>", 1)[0]
    assert f"head ran on torch <b>{installed}</b>" in ran_on and ": the installed torch" in ran_on
    assert "no base run" in ran_on and "--base-env" in ran_on
    both = load(f"{url}/runs/{runs['a']}", tmp_path, "run-a-torch").split('id="ran-on"', 1)[1].split("</span>", 1)[0]
    assert f"head ran on torch <b>{installed}</b> (<code>current+faults=aten::_softmax:offset=0.05</code>" in both
    assert f"base on torch <b>{installed}</b> (<code>current</code>" in both and "no base run" not in both


def test_run_page_puts_failures_first_and_collapses_passing_tests(served, tmp_path) -> None:
    url, runs = served
    data = httpx.get(f"{url}/api/v1/runs/{runs['a']}").json()
    dom = load(f"{url}/runs/{runs['a']}", tmp_path, "run-a-layout", height=1200)
    assert dom.index('id="failures"') < dom.index('id="outcomes"') < dom.index('id="results"')
    passing = dom.split('<details id="passing">', 1)[1].split("</details>", 1)[0]  # closed: no "open"
    passed = data["counts"]["passed"]
    assert f"<b>{passed}</b> passed test" in passing and passing.count("<tr data-test=") == passed
    listed = dom.split('id="results-table"', 1)[1].split("</table>", 1)[0]
    assert "<tr data-test=" in listed and 'class="passed"' not in listed  # the rest, not passing, first
    failed = [r for r in data["results"] if r["outcome"] == "failed"]
    assert failed and all(r["detail"] for r in failed)  # README: detail is the failure's report
    assert "traceback (tail)" in dom.split('id="failures"', 1)[1].split('id="outcomes"', 1)[0]
    opened = load(f"{url}/runs/{runs['a']}?outcome=passed", tmp_path, "run-a-passed")
    assert re.search(r'<details id="passing" open(="")?>', opened)


def test_spec_group_filter_scopes_the_failures(served, tmp_path) -> None:
    url, runs = served
    data = httpx.get(f"{url}/api/v1/runs/{runs['a']}").json()
    new = {v["id"] for v in data["verdicts"] if v["verdict"] == "NEW"}
    failing = sorted({r["id"] for r in data["results"] if r["outcome"] in ("failed", "crashed", "timed_out")} | new)
    assert any(t.startswith("core::") for t in failing)
    for group in ("core", "extra"):
        dom = load(f"{url}/runs/{runs['a']}?test={group}%3A%3A", tmp_path, f"run-a-{group}")
        listed = re.findall(r'class="failure-output" data-test="([^"]+)"', dom)
        assert sorted(listed) == [t for t in failing if t.startswith(f"{group}::")], group
        heading = dom.split('id="failures"', 1)[1].split("</h2>", 1)[0]
        assert len(listed) == len(failing) or f"{len(listed)} of {len(failing)}, filtered" in heading


def test_each_shards_raw_output_is_linked_and_served(served, tmp_path) -> None:
    url, runs = served
    dom = load(f"{url}/runs/{runs['a']}", tmp_path, "run-a-logs")
    links = re.findall(r'href="(/runs/[^"]+/logs/[^"]+)"', dom.split('id="log-links"', 1)[1].split("</p>", 1)[0])
    assert {link.rsplit("/", 1)[1] for link in links} == {"pytest.log", "junit.xml"}
    assert any("/logs/attempt-1/" in link for link in links) and any("/logs/base/" in link for link in links)
    log = httpx.get(url + next(link for link in links if link.endswith("attempt-1/pytest.log")))
    assert log.status_code == 200 and "softmax" in log.text
    junit = httpx.get(url + next(link for link in links if link.endswith("attempt-1/junit.xml")))
    assert junit.headers["content-type"].startswith("application/xml") and "<testsuite" in junit.text
    for bad in ("attempt-1/items.jsonl", "../../relay.db", "..%2F..%2Frelay.db"):
        assert httpx.get(f"{url}/runs/{runs['a']}/logs/{bad}").status_code == 404, bad


def test_a_failed_grid_cell_names_its_first_failure(served, tmp_path) -> None:
    url, runs = served
    dom = load(url + "/", tmp_path, "grid-tooltip", height=640)
    row_a = dom.split(f'<tr data-head="{HEAD_A}">', 1)[1].split("</tr>", 1)[0]
    core = row_a.split('data-column="spyre-sim/core"', 1)[1].split("</td>", 1)[0]
    assert "first failure: core::TestCommon::test_compare_cpu[softmax-float16]: " in core
    assert "device output differs from CPU" in core.split("first failure:", 1)[1]
    extra = row_a.split('data-column="spyre-sim/extra"', 1)[1].split("</td>", 1)[0]
    assert "first failure" not in extra
