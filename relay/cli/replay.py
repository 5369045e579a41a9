"""``relay replay``: the main job — one upstream change through the whole pipeline, locally.

The command is a composition root: it reads the change (a ChangeSet, PR-files JSON or unified
diff file, told apart by content; a version pair ``torch==X..torch==Y``; or with ``--upstream``
a commit or range of a checkout), then wires the
pipeline's ports — executors from ``relay.execution.registry`` (local pytest, or Celery shards
with ``RELAY_BROKER_URL``), the store on ``RELAY_DATABASE_URL``, a sink that stores the run and
posts it to the dashboard — and prints the summary.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from relay.cli.common import RelayCommand, app, err, fail, read_change_or_fail, settings_or_fail, spec_files_or_fail


def _git_change(ref: str, upstream: Path, settings, head_env: str | None, base_env: str | None):
    """``A..B`` (or one commit) in the checkout ``upstream``: the change set, its commits, and
    — with ``RELAY_COMMIT_ENV`` — the commit → environment resolver and both sides' environments
    (explicit ``--head-env`` / ``--base-env`` win)."""
    from relay.changes.gitrange import git_range
    from relay.envs.commits import resolver_for
    from relay.errors import CommitEnvError, GitRangeError

    err.print(f"reading {ref} from the checkout {upstream} …", highlight=False, markup=False, soft_wrap=True)
    try:
        found = git_range(upstream, ref, upstream=settings.upstream_repo)
        resolver = resolver_for(settings.commit_env)
        if resolver is not None and head_env is None:
            head_env = resolver.resolve(found.changeset.head)
            base_env = base_env or resolver.resolve(found.changeset.base)
    except (GitRangeError, CommitEnvError) as exc:
        fail(str(exc))
    commit_env = resolver.resolve if resolver is not None else None
    return found.changeset, found.commits, commit_env, head_env, base_env


def _change(ref: str, upstream: Path | None, settings, head_env: str | None, base_env: str | None):
    """What ``REF`` names: ``(changeset, commits, commit_env, head_env, base_env)``."""
    from relay.envs.versions import changeset_from_versions, version_pair
    from relay.errors import InputError

    try:
        pair = version_pair(ref) if not Path(ref).exists() else None
    except InputError as exc:
        fail(str(exc))
    if pair is not None:
        err.print(f"building the change set {pair[0]} → {pair[1]} from the release wheels …")
        from relay.cli.render import DownloadBars

        try:
            with DownloadBars(err) as bars:
                changeset = changeset_from_versions(*pair, settings.state_dir / "wheels", progress=bars)
        except InputError as exc:
            fail(str(exc))
        return changeset, None, None, head_env or pair[1], base_env or pair[0]
    if upstream is not None and not Path(ref).exists():
        return _git_change(ref, upstream, settings, head_env, base_env)
    return read_change_or_fail(ref), None, None, head_env, base_env


def _run(request, settings, *, spec: list[Path] | None, device: str, timeout: int, shards: int | None,
         upstream: Path | None, commit_env):
    """Wire the ports and run ``request``; returns the ``RunOutcome``."""
    from relay.cli.render import BarProgress
    from relay.errors import ConfigError, EnvironmentError_, SpecsInvalid
    from relay.execution.registry import executors_for
    from relay.pipeline.ports import Ports
    from relay.pipeline.request import RunConfig
    from relay.pipeline.run import run_change
    from relay.pipeline.specs import default_specs
    from relay.reporting.sink import StoreAndReport
    from relay.store.db import create_schema, make_engine, make_session_factory
    from relay.store.run_store import SqlRunStore
    from test_specs.run.runner import default_shards

    specs, shards = tuple(spec or default_specs()), shards or default_shards()
    config = RunConfig(spec_paths=specs, state_dir=settings.state_dir, backend=settings.backend,
                       device=device, timeout_s=timeout, shards=shards, upstream=upstream)
    engine = make_engine(settings.database_url)
    progress = BarProgress(err)
    try:
        create_schema(engine)
        sf = make_session_factory(engine)
        store = SqlRunStore(sf, main_ref=settings.quarantine_main_ref)
        ports = Ports(executors=executors_for(settings, specs, device=device, timeout_s=timeout,
                                              shards=shards, upstream=upstream),
                      store=store, sink=StoreAndReport(store, settings, sf), progress=progress,
                      commit_env=commit_env)
        return run_change(request, config, ports)
    except (EnvironmentError_, SpecsInvalid, ConfigError) as exc:
        progress.close()
        fail(str(exc))
    finally:
        progress.close()
        engine.dispose()


@app.command(cls=RelayCommand)
def replay(
    ref: Annotated[str, typer.Argument(
        help="A change file — a ChangeSet JSON (see examples/changes/), GitHub PR-files JSON or a unified "
        "diff, told apart by content (- = stdin) — a version pair torch==X..torch==Y (runs head and base "
        "in those versions), or with --upstream a commit or range A..B of that checkout (bisected for a "
        "culprit when RELAY_COMMIT_ENV is set).")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the run as JSON on stdout.")] = False,
    spec: Annotated[list[Path] | None, typer.Option(
        help="Spec files or directories of them (default: the bundled specs).")] = None,
    backend: Annotated[str, typer.Option(help="Backend profile.")] = "spyre-sim",
    device: Annotated[str, typer.Option(help="Device the tests run on.")] = "spyre",
    timeout: Annotated[int, typer.Option(help="Per-test timeout, seconds.")] = 120,
    head_env: Annotated[str | None, typer.Option(
        "--head-env",
        help="Environment of the head run: current, torch==X, a wheel path or URL, "
        "+faults=<SPYRE_SIM_FAULTS>.")] = None,
    base_env: Annotated[str | None, typer.Option(
        "--base-env", help="Environment of the baseline (default: current when --head-env is given).")] = None,
    upstream: Annotated[Path | None, typer.Option(
        "--upstream", exists=True, file_okay=False,
        help="A PyTorch checkout: run the specs' upstream test files (path: entries) from it.")] = None,
    shards: Annotated[int | None, typer.Option(
        "--shards", min=1, help="Concurrent pytest processes (default: one per core).")] = None,
    budget_minutes: Annotated[float | None, typer.Option(
        "--budget-minutes", min=0, help="Run only the top-ranked tests fitting this much measured test time.")] = None,
) -> None:
    """Select and run the tests an upstream change affects.

    Without --head-env/--base-env the tests run once, on the installed torch, with no base
    to compare with; with both, each side runs in its own torch and every test gets a verdict
    (NEW, FLAKY, BROKEN_TRUNK, ...).

    Exit status: 0 when the run's conclusion is success or neutral, 1 when it is failure,
    2 for bad input.

    \b
    Examples:
      relay replay examples/changes/torch-2.13.0..2.14.1.json --spec test_specs/specs/opinfo_core.yaml
      relay replay torch==2.13.0..torch==2.14.1 --spec test_specs/specs/opinfo_core.yaml
      relay replay examples/changes/pr-softmax.json \\
        --head-env 'current+faults=aten::_softmax:offset=0.05' --base-env current
      relay replay HEAD~3..HEAD --upstream ~/pytorch
    """
    from relay.cli.render import print_culprit, print_outcome
    from relay.envs.environments import validate
    from relay.errors import EnvironmentError_
    from relay.pipeline.request import RunRequest

    settings = settings_or_fail().model_copy(update={"backend": backend})
    for env_text in (head_env, base_env):
        if env_text is not None:
            try:
                validate(env_text)
            except EnvironmentError_ as exc:
                fail(str(exc))
    spec = spec_files_or_fail(spec)
    changeset, commits, commit_env, head_env, base_env = _change(ref, upstream, settings,
                                                                 head_env, base_env)
    request = RunRequest(changeset=changeset, head_env=head_env, base_env=base_env,
                         commits=commits, budget_minutes=budget_minutes)
    outcome = _run(request, settings, spec=spec, device=device, timeout=timeout, shards=shards,
                   upstream=upstream, commit_env=commit_env)
    skipped = sum(1 for t in outcome.selection.selected if t.mode == "skip")
    print_outcome(err, outcome, skipped_by_selection=skipped)
    print_culprit(err, outcome.run, len(commits or []))
    if json_out:
        sys.stdout.write(outcome.run.model_dump_json(indent=1, by_alias=True) + "\n")
    if outcome.run.conclusion == "failure":
        raise typer.Exit(1)
