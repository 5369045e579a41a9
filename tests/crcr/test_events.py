"""Which upstream deliveries do what (CRCR ``webhook/event_handler.py``), over loopback through
``create_app`` with the fake GitHub: only the upstream's events, only CRCR's actions, labels that
only start L3 checks, re-runs of crcr check runs and suites, nightly-only entries."""

from __future__ import annotations

from relay.store import get_delivery
from relay.store.dispatches import list_dispatches
from tests.fakes.github import pull_request_payload, push_payload

CHECK = "crcr/acme/l4-ci/CI/test"


def _status(relay, delivery_id):
    with relay.app.state.session_factory() as s:
        row = get_delivery(s, delivery_id)
        return row.status, row.error


def test_other_repository_is_acknowledged_as_ignored(crcr, recorder) -> None:
    relay, fake = crcr(upstream_repo="pytorch/pytorch")
    resp = relay.sender.send("pull_request", pull_request_payload(repo="someone/fork"),
                             delivery_id="x-1")
    assert (resp.status_code, resp.json()["status"]) == (200, "ignored")
    case = relay.sender.send("pull_request", pull_request_payload(repo="PyTorch/PyTorch"),
                             delivery_id="x-2")  # compared case-insensitively
    assert case.status_code == 202
    relay.drain()
    assert {r for r, _ in fake.dispatches} == {"acme/l1-ci", "acme/l2-ci", "acme/l3-ci", "acme/l4-ci"}
    assert len(fake.dispatches) == 4 and [d.id for d in recorder.calls] == ["x-2"]
    assert _status(relay, "x-1")[0] == "ignored"


def test_only_crcr_labels_do_anything_and_never_dispatch(crcr, recorder) -> None:
    relay, fake = crcr()
    bug = pull_request_payload(action="labeled", labels=("bug",))
    bug["label"] = {"name": "bug"}
    assert relay.sender.send("pull_request", bug, delivery_id="lb-1").json()["status"] == "ignored"
    crcr_label = pull_request_payload(action="labeled", labels=("ciflow/crcr/spyre",))
    crcr_label["label"] = {"name": "ciflow/crcr/spyre"}
    assert relay.sender.send("pull_request", crcr_label, delivery_id="lb-2").status_code == 202
    for action in ("assigned", "unlabeled", "edited"):
        resp = relay.sender.send("pull_request", pull_request_payload(action=action))
        assert resp.json()["status"] == "ignored"
    relay.drain()
    assert fake.dispatches == []
    assert [d.id for d in recorder.calls] == ["lb-2"]  # ignored ones never reach processing
    assert _status(relay, "lb-2")[0] == "processed"


def test_push_context_trunk_tag_plain_branch_and_deleted_ref(crcr) -> None:
    relay, fake = crcr("L4: [acme/l4-ci]\n")
    trunk = push_payload(after="e" * 40) | {"ref": "refs/tags/ciflow/trunk/6601"}
    deleted = push_payload(after="0" * 40) | {"ref": "refs/tags/ciflow/trunk/6602", "deleted": True}
    for delivery_id, payload in (("p-t", trunk), ("p-m", push_payload()), ("p-d", deleted)):
        relay.sender.send("push", payload, delivery_id=delivery_id)
    relay.drain()
    assert len(fake.dispatches) == 3  # CRCR dispatches every push of the upstream
    with relay.app.state.session_factory() as s:
        rows = {d.delivery_id: d for d in list_dispatches(s)}
    assert (rows["p-t"].pr_number, rows["p-t"].head_sha) == (6601, "e" * 40)
    assert (rows["p-m"].pr_number, rows["p-m"].head_sha) == (None, "d" * 40)
    assert (rows["p-d"].pr_number, rows["p-d"].head_sha) == (6602, None)


def test_nightly_only_entries_get_no_pr_or_push_dispatch(crcr) -> None:
    relay, fake = crcr("L2:\n  - acme/every\n  - acme/nightly: {events: [nightly]}\n")
    relay.sender.send("pull_request", pull_request_payload(), delivery_id="n-1")
    relay.drain()
    assert [r for r, _ in fake.dispatches] == ["acme/every"]


def _check_run(name: str = CHECK, external_id: str = "77:9", action: str = "rerequested") -> dict:
    return {"action": action, "repository": {"full_name": "pytorch/pytorch"},
            "check_run": {"id": 5, "name": name, "head_sha": "a" * 40, "external_id": external_id,
                          "pull_requests": []}}


def test_check_run_rerequested_reruns_failed_jobs(crcr) -> None:
    relay, fake = crcr()
    assert relay.sender.send("check_run", _check_run(), delivery_id="cr-1").status_code == 202
    relay.sender.send("check_run", _check_run(external_id="88"), delivery_id="cr-bare")
    relay.sender.send("check_run", _check_run(name="ci/other/thing"), delivery_id="cr-x")
    relay.sender.send("check_run", _check_run(external_id=""), delivery_id="cr-e")
    relay.sender.send("check_run", _check_run(name="crcr/acme/l2-ci/CI/t"), delivery_id="cr-l2")
    created = relay.sender.send("check_run", _check_run(action="created"), delivery_id="cr-c")
    assert created.json()["status"] == "ignored"
    relay.drain()
    # two worker threads may take the deliveries in either order
    assert sorted(fake.reruns) == [("acme/l4-ci", 77), ("acme/l4-ci", 88)]
    assert fake.dispatches == []  # a check_run is never dispatched
    assert {_status(relay, d)[0] for d in ("cr-1", "cr-bare", "cr-x", "cr-e", "cr-l2")} == {"processed"}


def test_already_running_is_benign_other_errors_fail_the_delivery(crcr) -> None:
    relay, fake = crcr()
    fake.running.add(77)
    relay.sender.send("check_run", _check_run(), delivery_id="ar-1")
    relay.drain()
    assert _status(relay, "ar-1") == ("processed", None) and fake.reruns == []
    fake.fail_with = [404]
    relay.sender.send("check_run", _check_run(external_id="78:9"), delivery_id="ar-2")
    relay.drain()
    status, error = _status(relay, "ar-2")
    assert status == "failed" and "404" in error


def test_check_suite_reruns_each_distinct_l3_plus_run_once_and_whole(crcr) -> None:
    """"Re-run all checks" re-runs each L3+ run whole (``…/rerun``, CRCR's
    ``rerun_workflow_run``): ``rerun-failed-jobs`` would re-run nothing of a green run."""
    relay, fake = crcr()
    for cid, name, ext in ((1, "crcr/acme/l4-ci/CI/a", "111:9"), (2, "crcr/acme/l4-ci/CI/b", "111:9"),
                           (3, "crcr/acme/l3-ci/CI/a", "222"), (4, "crcr/acme/l2-ci/CI/a", "333"),
                           (5, "lint", "444"), (6, "crcr/acme/l4-ci/CI/c", ""),
                           (7, "crcr/acme/l4-ci/CI/d", "555")):
        fake.check_runs[cid] = {"repo": "pytorch/pytorch", "name": name, "external_id": ext}
    fake.suites[9001] = list(range(1, 8))
    fake.running.add(555)
    suite = {"action": "rerequested", "repository": {"full_name": "pytorch/pytorch"},
             "check_suite": {"id": 9001, "head_sha": "a" * 40}}
    assert relay.sender.send("check_suite", suite, delivery_id="cs-1").status_code == 202
    done = relay.sender.send("check_suite", suite | {"action": "completed"}, delivery_id="cs-2")
    assert done.json()["status"] == "ignored"
    relay.drain()
    assert fake.whole_reruns == [("acme/l4-ci", 111), ("acme/l3-ci", 222)]
    assert fake.reruns == []  # nothing through rerun-failed-jobs
    assert _status(relay, "cs-1")[0] == "processed"


def test_a_sha_longer_than_64_characters_or_with_a_nul_is_no_sha() -> None:
    """A dispatch row holds a 64-character sha: a longer one (or a NUL) fails the typed payload
    check, naming the field, instead of failing later in the store."""
    import pytest

    from relay.errors import PayloadInvalid
    from relay.github.events import parse_event
    from tests.fakes.github import pull_request_payload

    for bad in ("a" * 65, "ab\x00cd"):
        payload = pull_request_payload(number=5)
        payload["pull_request"]["head"]["sha"] = bad
        with pytest.raises(PayloadInvalid, match="pull_request.head.sha"):
            parse_event("pull_request", payload)
    ok = pull_request_payload(number=5)
    ok["pull_request"]["head"]["sha"] = "f" * 64  # a SHA-256 repository's sha
    assert parse_event("pull_request", ok) is not None
