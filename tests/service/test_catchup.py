"""Catch-up after downtime (``relay.github.catchup``), over real loopback HTTP: a fake GitHub whose
webhook delivers to a relay that is down (connection refused), answered 500 through a stand-in,
or up; catch-up lists the hook's deliveries and asks for redeliveries, which the fake sends to
the relay like GitHub, signed with the production signer."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from sqlalchemy import func, select
from tenacity import wait_none

from relay.errors import GitHubAPIError
from relay.github.catchup import CATCHUP_MARGIN, catch_up, parse_since
from relay.github.client import GitHubClient
from relay.github.hook_deliveries import HookDelivery, HookNotFound, list_hook_deliveries
from relay.service import create_app
from relay.settings import Settings
from relay.store.tables import DeliveryRecord
from tests.fakes.github import FakeGitHub, pull_request_payload
from tests.fakes.live import LiveServer
from tests.service.conftest import SECRET, Recorder

REPO = "pytorch/pytorch"
HOOK = 4242


@pytest.fixture
def servers() -> Iterator[Callable[[Any], LiveServer]]:
    """``servers(app)``: a ``LiveServer`` bound to a free port but NOT started — until
    ``.start()`` a connection is refused, like a relay that is down.  Stopped at teardown."""
    made: list[LiveServer] = []

    def make(app: Any) -> LiveServer:
        made.append(LiveServer(app))
        return made[-1]

    yield make
    for server in reversed(made):
        if server._thread.is_alive():
            server.stop()
        server._sock.close()


def answering(status: int) -> FastAPI:
    """A stand-in for the relay's address (a proxy) answering every webhook with ``status``."""
    app = FastAPI()

    @app.post("/webhooks/github")
    def hook() -> JSONResponse:
        return JSONResponse({"detail": "stand-in"}, status_code=status)

    return app


@pytest.fixture
def gh(fake_github: tuple[FakeGitHub, str]) -> Iterator[tuple[FakeGitHub, GitHubClient]]:
    fake, url = fake_github
    with GitHubClient(url, wait=wait_none()) as client:
        yield fake, client


def relay_app(settings: Settings, recorder: Recorder, **overrides: Any) -> FastAPI:
    return create_app(settings.model_copy(update=overrides), processor=recorder, report=False)


#: PR numbers never reused, so no two deliveries of a test carry byte-identical bodies (the relay
#: answers a repeated body under a new delivery id as a duplicate; GitHub's redelivery keeps the id)
_NUMBERS = itertools.count(1)


def send(fake: FakeGitHub, n: int, **kwargs: Any) -> list[dict[str, Any]]:
    return [fake.deliver(HOOK, "pull_request", pull_request_payload(number=next(_NUMBERS)), **kwargs)
            for _ in range(n)]


def stored(app: FastAPI) -> dict[str, str]:
    with app.state.session_factory() as s:
        return dict(s.execute(select(DeliveryRecord.delivery_id, DeliveryRecord.status)).all())


def list_calls(fake: FakeGitHub) -> int:
    return sum(1 for r in fake.seen if r.method == "GET" and r.path.endswith("/deliveries"))


def test_missed_deliveries_are_redelivered_once_and_processed_once(
        gh, settings, recorder, servers, live_server) -> None:
    fake, client = gh
    first = relay_app(settings, recorder)
    up = servers(first).start()
    hook = fake.add_hook(REPO, up.url + "/webhooks/github", SECRET, HOOK)
    delivered = send(fake, 2)
    assert [e["status_code"] for e in delivered] == [202, 202]
    up.stop()  # the relay goes down
    refused = send(fake, 3)
    assert {(e["status_code"], e["status"]) for e in refused} == {(0, "failed to connect")}
    hook.url = live_server(answering(500)).url + "/webhooks/github"
    [errored] = send(fake, 1)
    hook.url = live_server(answering(200)).url + "/webhooks/github"
    [elsewhere] = send(fake, 1)  # answered 2xx by someone else: GitHub counts it delivered
    second = relay_app(settings, recorder)
    hook.url = servers(second).start().url + "/webhooks/github"  # back up (new address)

    report = catch_up(second.state.session_factory, client, REPO, HOOK)
    missed = [e["guid"] for e in refused + [errored]]
    assert report.redelivered == missed
    assert report.stored == [e["guid"] for e in delivered]
    assert report.delivered == [elsewhere["guid"]] and report.failed == []
    assert report.counts == {"listed": 7, "guids": 7, "redelivered": 4, "stored": 2,
                             "delivered": 1, "failed": 0}
    assert fake.redeliveries == [e["id"] for e in refused + [errored]]
    assert [e["redelivery"] for e in hook.log[-4:]] == [True] * 4
    assert [e["status_code"] for e in hook.log[-4:]] == [202] * 4
    assert second.state.queue.join(10.0)
    assert sorted(d.id for d in recorder.calls) == sorted(
        [e["guid"] for e in delivered] + missed)
    assert set(stored(second).values()) == {"processed"}

    again = catch_up(second.state.session_factory, client, REPO, HOOK)
    assert again.redelivered == [] and sorted(again.stored) == sorted(
        [e["guid"] for e in delivered] + missed)
    assert len(fake.redeliveries) == 4 and len(recorder.calls) == 6


def test_serve_catches_up_at_startup_in_the_background(
        fake_github, settings, recorder, servers) -> None:
    fake, url = fake_github
    app = relay_app(settings, recorder, catchup_hook_id=HOOK, upstream_repo=REPO,
                    github_api_url=url)
    server = servers(app)
    fake.add_hook(REPO, server.url + "/webhooks/github", SECRET, HOOK)
    missed = [e["guid"] for e in send(fake, 3)]
    server.start()  # returns once serving: the catch-up runs in its own thread
    worker = app.state.catchup
    assert worker is not None and worker.is_alive()
    worker.join(15.0)
    assert worker.error is None and worker.report is not None
    assert worker.report.redelivered == missed
    recorder.wait_for(3)
    assert sorted(d.id for d in recorder.calls) == sorted(missed)


def test_startup_catch_up_failure_is_logged_and_serving_goes_on(
        fake_github, settings, recorder, live_server, caplog) -> None:
    import httpx

    _fake, url = fake_github
    app = relay_app(settings, recorder, catchup_hook_id=999, upstream_repo=REPO,
                    github_api_url=url)
    server = live_server(app)
    app.state.catchup.join(15.0)
    assert isinstance(app.state.catchup.error, HookNotFound)
    assert "startup catch-up of webhook 999" in caplog.text
    assert httpx.get(server.url + "/healthz").status_code == 200


def test_pagination_over_more_than_100_deliveries(gh, settings, recorder, servers) -> None:
    fake, client = gh
    app = relay_app(settings, recorder)
    server = servers(app)
    fake.add_hook(REPO, server.url + "/webhooks/github", SECRET, HOOK)
    missed = [e["guid"] for e in send(fake, 150)]
    server.start()
    report = catch_up(app.state.session_factory, client, REPO, HOOK)
    assert list_calls(fake) == 2  # 100 + 50, following Link rel="next" (cursor)
    assert report.redelivered == missed and len(set(fake.redeliveries)) == 150
    assert app.state.queue.join(20.0)
    assert sorted(d.id for d in recorder.calls) == sorted(missed)

    again = catch_up(app.state.session_factory, client, REPO, HOOK)
    assert again.redelivered == [] and again.listed == 300  # 150 failed + 150 redelivered
    assert list_calls(fake) == 2 + 3 and len(fake.redeliveries) == 150


def test_deliveries_older_than_the_window_are_ignored(gh, settings, recorder, servers) -> None:
    fake, client = gh
    app = relay_app(settings, recorder)
    server = servers(app)
    fake.add_hook(REPO, server.url + "/webhooks/github", SECRET, HOOK)
    now = datetime.now(UTC)
    fresh = [e["guid"] for e in send(fake, 2, delivered_at=now - timedelta(days=2))]
    send(fake, 120, delivered_at=now - timedelta(days=4))  # past GitHub's 3 days
    server.start()
    report = catch_up(app.state.session_factory, client, REPO, HOOK, now=now)
    assert report.since == now - timedelta(days=3)
    assert report.redelivered == fresh and report.listed == 2
    assert list_calls(fake) == 1  # stopped at the first entry older than the window
    assert app.state.queue.join(10.0)

    assert fake.redeliveries == [e["id"] for e in fake.hooks[HOOK].log[:2]]

    # with deliveries stored, the window starts at the newest one less the margin
    with app.state.session_factory() as s:
        newest = s.scalar(select(func.max(DeliveryRecord.received_at))).replace(
            tzinfo=UTC)
    fake.hooks[HOOK].url = servers(answering(200)).url + "/webhooks/github"  # never up: refused
    [before] = send(fake, 1, delivered_at=newest - CATCHUP_MARGIN - timedelta(minutes=5))
    [after] = send(fake, 1)
    assert before["status_code"] == after["status_code"] == 0
    fake.hooks[HOOK].url = server.url + "/webhooks/github"
    report = catch_up(app.state.session_factory, client, REPO, HOOK)
    assert report.since == newest - CATCHUP_MARGIN
    assert report.redelivered == [after["guid"]] and report.stored == fresh
    wide = catch_up(app.state.session_factory, client, REPO, HOOK,
                    since=parse_since((newest - timedelta(hours=1)).isoformat()))
    assert wide.redelivered == [before["guid"]]
    assert app.state.queue.join(10.0)
    assert sorted(d.id for d in recorder.calls) == sorted(fresh + [before["guid"], after["guid"]])


def test_github_5xx_on_the_list_is_retried(gh, settings, recorder, servers) -> None:
    fake, client = gh
    app = relay_app(settings, recorder)
    server = servers(app)
    fake.add_hook(REPO, server.url + "/webhooks/github", SECRET, HOOK)
    missed = [e["guid"] for e in send(fake, 2)]
    server.start()
    fake.fail_with = [502, 503]
    report = catch_up(app.state.session_factory, client, REPO, HOOK)
    assert list_calls(fake) == 3 and report.redelivered == missed
    fake.fail_with = [500] * 4  # the client's 4 attempts all fail: a clear error, nothing asked
    with pytest.raises(GitHubAPIError) as err:
        catch_up(app.state.session_factory, client, REPO, HOOK)
    assert err.value.status_code == 500 and len(fake.redeliveries) == 2


def test_unknown_hook_and_refused_redelivery(gh, settings, recorder, servers) -> None:
    fake, client = gh
    app = relay_app(settings, recorder)
    server = servers(app)
    hook = fake.add_hook(REPO, server.url + "/webhooks/github", SECRET, HOOK)
    with pytest.raises(HookNotFound, match="webhook 999 of pytorch/pytorch not found"):
        catch_up(app.state.session_factory, client, REPO, 999)
    with pytest.raises(HookNotFound):  # a hook of another repository is not this one's
        list_hook_deliveries(client, "acme/other", HOOK)
    with pytest.raises(ValueError, match="owner/name"):
        catch_up(app.state.session_factory, client, "not a repo", HOOK)
    gone, kept = send(fake, 2)
    del hook.bodies[gone["id"]]  # GitHub answers 404 for this attempt: reported, others go on
    server.start()
    report = catch_up(app.state.session_factory, client, REPO, HOOK)
    assert [f.guid for f in report.failed] == [gone["guid"]] and "404" in report.failed[0].error
    assert report.redelivered == [kept["guid"]]


def test_cli_catch_up(fake_github, settings, recorder, servers, monkeypatch) -> None:
    from typer.testing import CliRunner

    from relay.cli import app as cli_app

    fake, url = fake_github
    app = relay_app(settings, recorder)
    server = servers(app)
    fake.add_hook(REPO, server.url + "/webhooks/github", SECRET, HOOK)
    missed = [e["guid"] for e in send(fake, 2)]
    server.start()
    monkeypatch.setenv("RELAY_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("RELAY_GITHUB_API_URL", url)
    monkeypatch.setenv("RELAY_UPSTREAM_REPO", REPO)
    runner = CliRunner()

    result = runner.invoke(cli_app, ["catch-up", "--hook-id", str(HOOK), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["redelivered"] == missed and report["counts"]["redelivered"] == 2
    assert "redelivered" in result.stderr
    assert app.state.queue.join(10.0) and len(recorder.calls) == 2

    monkeypatch.setenv("RELAY_CATCHUP_HOOK_ID", str(HOOK))
    quiet = runner.invoke(cli_app, ["catch-up", "--since", "2020-01-01"])
    assert quiet.exit_code == 0 and quiet.stdout == "" and "already stored" in quiet.stderr

    missing = runner.invoke(cli_app, ["catch-up", "--repo", REPO, "--hook-id", "999"])
    assert missing.exit_code == 1 and "webhook 999 of pytorch/pytorch not found" in missing.stderr
    assert "Traceback" not in missing.output and isinstance(missing.exception, SystemExit)
    bad = runner.invoke(cli_app, ["catch-up", "--since", "yesterday"])
    assert bad.exit_code == 2 and "--since must be an ISO 8601 time" in bad.stderr
    monkeypatch.delenv("RELAY_CATCHUP_HOOK_ID")
    nohook = runner.invoke(cli_app, ["catch-up"])
    assert nohook.exit_code == 2 and "RELAY_CATCHUP_HOOK_ID" in nohook.stderr
    badrepo = runner.invoke(cli_app, ["catch-up", "--hook-id", "1", "--repo", "nope"])
    assert badrepo.exit_code == 2 and "owner/name" in badrepo.stderr


@pytest.mark.parametrize("code, ok", [(200, True), (204, True), (0, False), (302, False),
                                      (500, False)])
def test_an_attempt_succeeded_only_on_2xx(code: int, ok: bool) -> None:
    entry = HookDelivery.model_validate(
        {"id": 1, "guid": "g", "delivered_at": "2021-05-12T20:33:44Z", "redelivery": False,
         "duration": 0.03, "status": "x", "status_code": code, "event": "push", "action": None,
         "installation_id": None, "repository_id": 1, "unknown_key": 1})
    assert entry.succeeded is ok and entry.delivered_at.tzinfo is not None
