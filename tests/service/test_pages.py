"""Every dashboard page renders from the same query layer as its JSON twin: the grid, a run (counts
that add up, filters, failure output, selection with reasons), a commit, a test's history with
its chart, search, deliveries in flight, flaky tests and readiness — escaping whatever came from
outside.  (The browser tests in ``test_page_browser.py`` load them from real replays.)"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import httpx
import pytest

from relay.domain.culprit import BisectStep, Culprit
from relay.domain.run import Run
from relay.domain.verdicts import Verdict
from relay.store import insert_delivery, mark_delivery, save_run
from relay.store.progress import write_progress
from relay.store.tables import utcnow
from selection.models import SelectedTest
from test_specs.values.results import TestResult
from tests.fakes.github import pull_request_payload, push_payload
from tests.fakes.runs import make_run

EVIL = "<script>alert(1)</script>"


def _regression_run() -> Run:
    ops_test, modules_test = "test/test_ops.py::TestCommon::test_x", "test/test_modules.py::TestModule::test_forward"
    results = [TestResult(id="core::TestCommon::test_x[softmax-float16]", upstream=ops_test, op="softmax",
                          dtype="float16", outcome="failed", attempts=3, duration_ms=40.0,
                          message=f"AssertionError: not close {EVIL}"),
               TestResult(id="core::TestCommon::test_x[add-float16]", upstream=ops_test, op="add",
                          dtype="float16", outcome="flaky", attempts=2, duration_ms=20.0),
               TestResult(id="mods::TestModule::test_forward[nn.Linear]", upstream=modules_test,
                          module="nn.Linear", outcome="xfailed", duration_ms=5.0, message="no kernel")]
    verdicts = [Verdict(id=results[0].id, verdict="NEW", head="failed", base="passed", reason=f"fails on head {EVIL}"),
                Verdict(id=results[1].id, verdict="FLAKY", head="flaky", base="passed", reason="rerun passed"),
                Verdict(id=results[2].id, verdict="KNOWN", head="xfailed", base="xfailed", reason="xfail by the spec")]
    selection = [SelectedTest(id=r.id, upstream=r.upstream, op=r.op, mode="mandatory_success", score=0.9 - i / 10,
                              reasons=[f"reason {i} {EVIL}"]) for i, r in enumerate(results)]
    selection.append(SelectedTest(id="core::TestCommon::test_x[fft.fft-float16]", upstream="u", op="fft.fft",
                                  mode="skip", score=0.1, reasons=["aten::_fft_r2c has no Spyre kernel"]))
    return make_run("reg-1", results=results, outcomes=(), selected=3, counts=Run.count_outcomes(results),
                    verdicts=verdicts, conclusion="failure", title=f"Speed up softmax {EVIL}",
                    ref="refs/pull/4242/head", selection=selection, head="a" * 40, base="b" * 40,
                    environments={"head": {"name": "current+faults=x"}, "base": {"name": "current"}},
                    culprit=Culprit(commit="c" * 40, tests=[results[0].id], rounds=1,
                                    steps=[BisectStep(commit="c" * 40, failed=[results[0].id])]))


@pytest.fixture
def filled(relay):
    with relay.app.state.session_factory() as s:
        save_run(s, _regression_run())
        save_run(s, make_run("plain-1", minutes=5, head="e" * 40, outcomes=("passed", "passed", "skipped")))
        insert_delivery(s, delivery_id="d-run", event="pull_request", action="opened",
                        payload=json.dumps(pull_request_payload(number=77, head="f" * 40, title=f"Queued {EVIL}")))
        mark_delivery(s, "d-run", "processing")
        write_progress(s, "d-run", phase="running tests", total=8, done=3, counts={"passed": 2, "failed": 1})
        insert_delivery(s, delivery_id="d-retry", event="push", payload=json.dumps(push_payload(after="9" * 40)))
        mark_delivery(s, "d-retry", "received", "attempt 1 of 5 failed, retried in 30 s: GitHubAPIError <x>",
                      next_attempt_at=utcnow() + timedelta(seconds=30))
        insert_delivery(s, delivery_id="d-bad", event="pull_request", payload="{}")
        mark_delivery(s, "d-bad", "failed", f"ValidationError {EVIL}")
    return relay


def _get(relay, path: str, **params) -> httpx.Response:
    got = httpx.get(relay.url + path, params=params)
    if "text/html" in got.headers["content-type"]:  # JSON carries the text as it came
        assert "<script>alert" not in got.text, f"{path} does not escape"
    return got


def test_grid_rows_cells_and_in_flight_work(filled) -> None:
    grid = _get(filled, "/api/v1/grid").json()
    heads = [r["head"] for r in grid["rows"]]
    assert heads[:2] == ["9" * 40, "f" * 40]  # in-flight deliveries are the newest rows
    assert {"e" * 40, "a" * 40} <= set(heads)
    keys = [c["key"] for c in grid["columns"]]
    assert keys == ["spyre-sim", "spyre-sim/core", "spyre-sim/mods", "spyre-sim/plain-1"]
    reg = next(r for r in grid["rows"] if r["head"] == "a" * 40)
    assert reg["pr_number"] == 4242 and reg["links"]["pr"] == "https://github.com/pytorch/pytorch/pull/4242"
    assert {k: c["char"] for k, c in reg["cells"].items()} == {"spyre-sim": "X", "spyre-sim/core": "X",
                                                               "spyre-sim/mods": "O"}
    running = next(r for r in grid["rows"] if r["head"] == "f" * 40)
    assert running["pending"]["char"] == "?" and running["pending"]["progress"]["done"] == 3
    assert next(r for r in grid["rows"] if r["head"] == "9" * 40)["pending"]["conclusion"] == "retrying"
    html = _get(filled, "/").text
    assert 'data-live="1"' in html and "Speed up softmax &lt;script&gt;" in html
    assert 'href="/runs/reg-1?test=core%3A%3A"' in html
    assert 'href="https://github.com/pytorch/pytorch/pull/4242">#4242' in html
    assert re.search(r'data-column="spyre-sim" data-conclusion="pending">\s*<a href="/deliveries#d-run"', html)


def test_run_page_counts_filters_failures_and_selection(filled) -> None:
    data = _get(filled, "/api/v1/runs/reg-1").json()
    html = _get(filled, "/runs/reg-1").text
    shown = {o: int(n) for o, n in re.findall(r'<tr data-outcome="(\w+)".*?data-count="(\d+)"', html)}
    assert {o: n for o, n in shown.items() if n} == {o: n for o, n in data["counts"].items() if n}
    assert sum(shown.values()) == data["selected"] == 3
    assert '<th class="num" id="outcomes-total">3</th>' in html
    assert "<b>4</b> of 100 tests: <b>3</b> run + <b>1</b> classified <code>skip</code>" in html
    assert "1 New Failure, 1 Flaky" in html and "fails on head &lt;script&gt;" in html
    assert "AssertionError: not close &lt;script&gt;" in html  # the failure output, escaped
    assert "reason 0 &lt;script&gt;" in html and "aten::_fft_r2c has no Spyre kernel" in html
    assert 'href="https://github.com/pytorch/pytorch/pull/4242"' in html and "culprit" in html.lower()
    filtered = _get(filled, "/runs/reg-1", op="add").text
    table = filtered.split('id="results-table"', 1)[1].split("</table>", 1)[0]
    assert "[add-float16]" in table and "[softmax-float16]" not in table
    by_verdict = _get(filled, "/runs/reg-1", verdict="NEW").text.split('id="results-table"', 1)[1]
    new_only = by_verdict.split("</table>", 1)[0]
    assert "[softmax-float16]" in new_only and "[add-float16]" not in new_only
    missing = _get(filled, "/runs/nope")
    assert missing.status_code == 404 and "run not found: nope" in missing.text
    assert _get(filled, "/runs/reg-1", verdict="<x>").status_code == 422


def test_commit_test_search_pages(filled) -> None:
    commit = _get(filled, "/commits/" + "a" * 40).text
    assert 'data-run="reg-1"' in commit and "https://github.com/pytorch/pytorch/commit/" + "a" * 40 in commit
    assert _get(filled, "/commits/xyz").status_code == 400
    blamed = _get(filled, "/commits/" + "c" * 40).text
    assert 'id="blamed"' in blamed and 'data-run="reg-1"' in blamed
    test_id = "core::TestCommon::test_x[softmax-float16]"
    page = _get(filled, "/tests/history", test=test_id).text
    assert 'id="history-chart"' in page and "<rect" in page and 'class="b-failed"' in page
    assert "AssertionError: not close &lt;script&gt;" in page and "v-NEW" in page
    assert _get(filled, "/tests/history").status_code == 400
    found = _get(filled, "/api/v1/tests", test="TestCommon", verdict="FLAKY").json()["tests"]
    assert [t["test_id"] for t in found] == ["core::TestCommon::test_x[add-float16]"]
    by_op = _get(filled, "/tests", op="softmax").text
    assert 'data-test="core::TestCommon::test_x[softmax-float16]"' in by_op and "[add-float16]" not in by_op
    assert _get(filled, "/api/v1/tests").status_code == 400


def test_deliveries_flaky_readiness_pages(filled) -> None:
    rows = {d["delivery_id"]: d for d in _get(filled, "/api/v1/deliveries").json()["deliveries"]}
    assert rows["d-run"]["progress"]["done"] == 3 and rows["d-retry"]["next_attempt_at"]
    html = _get(filled, "/deliveries").text
    assert 'data-live="1"' in html and "3/8 · running tests" in html and "GitHubAPIError &lt;x&gt;" in html
    retrying = html.split('data-section="retrying"', 1)[1].split("</table>", 1)[0]
    assert "d-retry" in retrying and "(in " in retrying
    assert "ValidationError &lt;script&gt;" in html.split('data-section="failed"', 1)[1]
    flaky = _get(filled, "/flaky").text
    assert 'data-test="core::TestCommon::test_x[add-float16]"' in flaky
    ready = _get(filled, "/backends/spyre-sim/readiness").text
    for text in ('id="level">L2', "results are posted to the dashboard", "weekly job success above 90 %",
                 'id="trend-success_rate"', 'id="trend-p50_e2e_ms"', 'id="trend-share_over_3h"',
                 'id="trend-p50_queue_ms"'):
        assert text in ready
    assert _get(filled, "/backends/acme/none/readiness").status_code == 404
    weekly = _get(filled, "/api/v1/backends/spyre-sim/readiness").json()["weekly"]
    assert len(weekly) == 8 and sum(w["jobs"] for w in weekly) >= 0


def test_pages_and_files_carry_the_security_headers_and_no_inline_script(filled) -> None:
    """A CSP without inline script (the auto-refresh is a static file), nosniff, no framing, a
    Referrer-Policy on every page; the spec proposal is plain text a browser will not sniff."""
    with filled.app.state.session_factory() as s:
        save_run(s, make_run("patch-1", spec_proposal=f"--- a/s.yaml\n+++ b/s.yaml\n+{EVIL}\n"))
    for path in ("/", "/runs/reg-1", "/deliveries", "/flaky", "/runs/nope", "/api/v1/grid",
                 "/runs/patch-1/spec-proposal.patch", "/static/refresh.js"):
        got = httpx.get(filled.url + path)
        csp = dict(part.strip().split(" ", 1) for part in got.headers["content-security-policy"].split(";"))
        assert csp["script-src"] == "'self'" and "unsafe-inline" not in csp["script-src"], path
        assert csp["frame-ancestors"] == "'none'" and csp["default-src"] == "'none'", path
        assert got.headers["x-content-type-options"] == "nosniff", path
        assert got.headers["referrer-policy"] == "same-origin", path
        if "text/html" in got.headers["content-type"]:
            scripts = re.findall(r"<script[^>]*>", got.text)
            assert all('src="/static/' in tag for tag in scripts), (path, scripts)
    assert '<script src="/static/refresh.js">' in httpx.get(filled.url + "/").text  # live: in-flight work
    patch = httpx.get(filled.url + "/runs/patch-1/spec-proposal.patch")
    assert patch.headers["content-type"] == "text/plain; charset=utf-8" and EVIL in patch.text
    js = httpx.get(filled.url + "/static/refresh.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    assert "dataset.refreshMs" in js.text
