"""Commit → environment resolvers, their configuration, push commit lists, git ranges, and the
culprit's storage, dashboard JSON and HUD body (no test execution here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from relay.changes.gitrange import GitRangeError, git_range, looks_like_range
from relay.domain.culprit import BisectStep, Culprit
from relay.envs.commits import CommitEnvError, GitFaultsResolver, TemplateResolver, parse_commit_env, resolver_for
from relay.settings import Settings
from tests.fakes.upstream_git import FAULTS_FILE, SOFTMAX, git, make_upstream

FAULT = "aten::_softmax:offset=0.05"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory):
    return make_upstream(tmp_path_factory.mktemp("up") / "repo", 4, bad=2, faults=FAULT)


def test_git_faults_resolver_reads_the_file_at_each_commit(upstream) -> None:
    r = parse_commit_env(f"git-faults:{upstream.path}")
    assert isinstance(r, GitFaultsResolver) and r.path == FAULTS_FILE
    assert [r.resolve(c) for c in [upstream.root, *upstream.commits]] == \
        ["current", "current", "current", f"current+faults={FAULT}", f"current+faults={FAULT}"]
    assert r.resolve(upstream.commits[3][:10]) == f"current+faults={FAULT}"  # short sha
    # the work tree is never read: a file only on disk does not count
    (upstream.path / "other-faults").write_text("aten::mm:raise\n")
    assert parse_commit_env(f"git-faults:{upstream.path}#other-faults").resolve(upstream.commits[3]) == "current"


def test_git_faults_resolver_refuses_unknown_commits_and_bad_faults(tmp_path: Path, upstream) -> None:
    r = parse_commit_env(f"git-faults:{upstream.path}")
    with pytest.raises(CommitEnvError, match="not found in"):
        r.resolve("f" * 40)
    with pytest.raises(CommitEnvError, match="not a hex commit sha"):
        r.resolve("main; rm -rf /")
    bad = make_upstream(tmp_path / "bad", 1, bad=0, faults="aten::no_such_op:raise")
    with pytest.raises(CommitEnvError, match="no_such_op"):
        parse_commit_env(f"git-faults:{bad.path}").resolve(bad.commits[0])
    directory = str(SOFTMAX).rsplit("/", 1)[0]  # a tree in every commit, not a file
    with pytest.raises(CommitEnvError, match="is a tree, not a file"):
        parse_commit_env(f"git-faults:{upstream.path}#{directory}").resolve(upstream.commits[0])


def test_template_resolver_fills_the_sha() -> None:
    r = parse_commit_env("https://wheels.example.org/{sha}/torch-2.14.0-cp312-linux_x86_64.whl")
    assert isinstance(r, TemplateResolver)
    assert r.resolve("ab" * 20) == f"https://wheels.example.org/{'ab' * 20}/torch-2.14.0-cp312-linux_x86_64.whl"
    assert parse_commit_env("torch==2.14.0.dev0+git{sha}").resolve("abc1234") == "torch==2.14.0.dev0+gitabc1234"
    faulty = parse_commit_env("/wheels/torch-{sha}.whl+faults=" + FAULT)
    assert faulty.resolve("0123abc") == f"/wheels/torch-0123abc.whl+faults={FAULT}"
    with pytest.raises(CommitEnvError, match="not a hex commit sha"):
        r.resolve("../../etc")


@pytest.mark.parametrize(("text", "message"), [
    ("nonsense", "expected 'git-faults:<upstream checkout>' or an environment template"),
    ("git-faults:", "no checkout path"),
    ("git-faults:/no/such/dir", "is not a git checkout"),
    ("conda-env-{sha}", "is not 'current', a torch requirement, a wheel or a URL"),
    ("current+faults=aten::nope:raise-{sha}", "RELAY_COMMIT_ENV="),
])
def test_bad_commit_env_is_a_clear_configuration_error(text: str, message: str) -> None:
    with pytest.raises(CommitEnvError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_commit_env(text)
    with pytest.raises(ValidationError, match="RELAY_COMMIT_ENV"):
        Settings(commit_env=text)


def test_commit_env_setting(monkeypatch: pytest.MonkeyPatch, upstream) -> None:
    assert Settings().commit_env is None and resolver_for(Settings().commit_env) is None
    assert Settings(commit_env="  ").commit_env is None
    monkeypatch.setenv("RELAY_COMMIT_ENV", f"git-faults:{upstream.path}")
    resolver = resolver_for(Settings().commit_env)
    assert isinstance(resolver, GitFaultsResolver) and resolver.checkout == upstream.path.resolve()


def test_git_range_lists_first_parent_commits_and_the_change(upstream) -> None:
    got = git_range(upstream.path, f"{upstream.root[:10]}..main")
    assert got.commits == upstream.commits
    assert (got.changeset.base, got.changeset.head) == (upstream.root, upstream.commits[-1])
    files = {f.filename: f.status for f in got.changeset.files}
    assert files[SOFTMAX] == "modified" and files[FAULTS_FILE] == "added"
    one = git_range(upstream.path, upstream.commits[2])
    assert one.commits == [upstream.commits[2]] and one.changeset.base == upstream.commits[1]
    assert looks_like_range("a..b") and not looks_like_range("a...b")
    with pytest.raises(GitRangeError, match="is not a commit"):
        git_range(upstream.path, "nope..main")
    with pytest.raises(GitRangeError, match="no commits between"):
        git_range(upstream.path, "main..main")
    with pytest.raises(GitRangeError, match="root commit"):
        git_range(upstream.path, upstream.root)


def test_push_commits_completes_a_cut_list_from_the_compare_api(fake_github_server) -> None:
    from relay.github.events import PushEvent
    from relay.worker.run_requests import push_commits
    from tests.fakes.github import push_payload

    fake, url = fake_github_server
    settings = Settings(github_api_url=url, github_token="ghs_fake")
    shas = [f"{i:040x}" for i in range(1, 131)]
    before, after = "c" * 40, shas[-1]
    listed = [{"id": s} for s in shas[-20:]]  # a cut list of 20
    event = PushEvent.model_validate(push_payload(before=before, after=after, commits=listed))
    assert push_commits(event, settings) is None  # compare unknown to GitHub: not bisectable
    fake.compare_commits[("pytorch/pytorch", before, after)] = shas
    assert push_commits(event, settings) == shas  # paged: 100 + 30
    pages = [s.query.get("page") for s in fake.seen if "/compare/" in s.path]
    assert pages[-2:] == ["1", "2"]
    short = PushEvent.model_validate(push_payload(before=before, after=after,
                                                  commits=[{"id": s} for s in shas[-5:]]))
    n = len(fake.seen)
    assert push_commits(short, settings) == shas[-5:] and len(fake.seen) == n  # no API call
    assert push_commits(short.model_copy(update={"forced": True}), settings) is None
    wrong_end = PushEvent.model_validate(push_payload(before=before, after="e" * 40,
                                                      commits=[{"id": s} for s in shas[:3]]))
    assert push_commits(wrong_end, settings) is None


@pytest.fixture
def fake_github_server(live_server):
    from tests.fakes.github import FakeGitHub

    fake = FakeGitHub()
    return fake, live_server(fake.app()).url


def _culprit(commit: str) -> Culprit:
    return Culprit(commit=commit, tests=["t::softmax"], rounds=2, steps=[
        BisectStep(commit="1" * 40, failed=[], environment="current", run="r1"),
        BisectStep(commit=commit, failed=["t::softmax"], environment=f"current+faults={FAULT}",
                   run="r2")])


def test_culprit_is_stored_loaded_listed_and_reported(tmp_path: Path) -> None:
    from relay.domain.verdicts import Verdict
    from relay.reporting.body import build_hud_body
    from relay.reporting.models import HudBody
    from relay.store import create_schema, list_runs, load_run, make_engine, make_session_factory, save_run
    from relay.store.culprits import load_culprit, runs_blaming, save_culprit
    from relay.store.regression import save_regression
    from tests.fakes.runs import make_run

    engine = make_engine(f"sqlite:///{tmp_path / 'r.db'}")
    create_schema(engine)
    bad = "2" * 40
    verdicts = [Verdict(id="run-1::t0", verdict="OK", head="passed", base="passed", reason="passes"),
                Verdict(id="run-1::t1", verdict="NEW", head="failed", base="passed",
                        reason="fails on head, passed on base")]
    envs = {"head": {"name": f"current+faults={FAULT}", "faults": FAULT},
            "base": {"name": "current", "faults": None}}
    run = make_run("run-1", outcomes=("passed", "failed"), verdicts=verdicts, environments=envs,
                   culprit=_culprit(bad), ref="refs/heads/main", baseline_run="base-1")
    base_run = make_run("base-1", minutes=-5, head=run.base, trigger="replay")
    with make_session_factory(engine)() as s:
        save_run(s, base_run)
        save_regression(s, "base-1", {"head": envs["base"]}, [])
        save_run(s, run)
        save_regression(s, "run-1", envs, verdicts)
        save_culprit(s, "run-1", run.culprit)
        loaded = load_run(s, "run-1")
        assert loaded.culprit == run.culprit and load_culprit(s, "run-1") == run.culprit
        assert loaded.verdicts == verdicts and loaded.ref == "refs/heads/main"
        assert loaded.verdict_counts["NEW"] == 1 and loaded.verdict_counts["OK"] == 1
        assert loaded.environments["head"]["faults"] == FAULT
        assert loaded.baseline_run == "base-1"  # stored with the run
        assert runs_blaming(s, bad[:9]) == ["run-1"] and runs_blaming(s, "3" * 40) == []
        listed = {r.id: r for r in list_runs(s)}
        assert listed["run-1"].verdicts == [] and listed["run-1"].verdict_counts["NEW"] == 1
        assert listed["run-1"].culprit == run.culprit and listed["base-1"].culprit is None
    engine.dispose()
    body = build_hud_body(run, Settings()).model_dump(mode="json")
    wf = body["relay"]  # our extras, outside the CRCR payload (issue 15)
    assert "culprit" not in body["untrusted"]["callback_payload"]["workflow"]
    assert wf["culprit"]["commit"] == bad and wf["culprit"]["rounds"] == 2
    assert [s["failed"] for s in wf["culprit"]["steps"]] == [0, 1]
    assert wf["verdicts"]["NEW"] == 1 and wf["new_tests"] == ["run-1::t1"]
    assert HudBody.model_validate(body).model_dump(mode="json") == body  # still the HUD shape
    plain = build_hud_body(make_run("run-2"), Settings()).model_dump(mode="json")
    assert {"culprit", "verdicts"}.isdisjoint(plain["relay"])


def test_commit_page_lists_runs_that_blamed_it(tmp_path: Path, live_server) -> None:
    import httpx

    from relay.service import create_app
    from relay.store import save_run
    from relay.store.culprits import save_culprit
    from tests.fakes.runs import make_run

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'r.db'}", state_dir=tmp_path)
    app = create_app(settings, webhooks_enabled=False)
    server = live_server(app)
    bad = "4" * 40
    with app.state.session_factory() as s:
        save_run(s, make_run("blamer"))
        save_culprit(s, "blamer", _culprit(bad))
    got = httpx.get(f"{server.url}/api/v1/commits/{bad[:12]}").json()
    assert [r["id"] for r in got["blamed_in"]] == ["blamer"]
    assert got["blamed_in"][0]["culprit"]["commit"] == bad and "verdicts" not in got["blamed_in"][0]
    detail = httpx.get(f"{server.url}/api/v1/runs/blamer").json()
    assert detail["culprit"]["steps"][1]["environment"] == f"current+faults={FAULT}"
    assert httpx.get(f"{server.url}/api/v1/commits/{'5' * 40}").json()["blamed_in"] == []


def test_git_helper_builds_distinct_commits(upstream) -> None:
    assert len(set(upstream.commits)) == 4
    assert git(upstream.path, "show", f"{upstream.commits[2]}:{FAULTS_FILE}").strip().endswith(FAULT)


def test_pull_request_runs_head_against_base_in_their_commits_envs(fake_github_server, upstream) -> None:

    from relay.github.events import PullRequestEvent
    from relay.worker.run_requests import pr_run_request
    from tests.fakes.github import pr_files, pull_request_payload

    fake, url = fake_github_server
    fake.add_pull("pytorch/pytorch", 7, pr_files(2))
    settings = Settings(github_api_url=url, commit_env=f"git-faults:{upstream.path}")
    payload = pull_request_payload(base=upstream.commits[0], head=upstream.commits[3])
    request = pr_run_request(PullRequestEvent.model_validate(payload), "d-1", settings)
    assert request.head_env == f"current+faults={FAULT}" and request.base_env == "current"
    assert request.ref == "refs/pull/7/head" and request.commits is None
    unknown = pull_request_payload(base="e" * 40, head=upstream.commits[3])
    with pytest.raises(CommitEnvError, match="not found in"):
        pr_run_request(PullRequestEvent.model_validate(unknown), "d-2", settings)
