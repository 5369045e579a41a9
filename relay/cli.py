"""The ``relay`` command line (design §3): serve, replay, select, changes, specs check,
quarantine, catch-up.

Human output (tables, progress) goes to stderr; ``--json`` output alone goes to stdout.  Bad
input ends with a one-line message naming the file (and line where known) and exit code 2;
never a traceback.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Cross-repository CI relay and regression service for PyTorch backends.")
specs_app = typer.Typer(no_args_is_help=True, help="Validate test specs.")
app.add_typer(specs_app, name="specs")
db_app = typer.Typer(no_args_is_help=True, help="Database schema.")
app.add_typer(db_app, name="db")
err = Console(stderr=True)
# Import-time deprecation notices and sample-level numeric warnings of torch's test machinery are
# noise in a CLI's output; warnings of our own code still show.
warnings.filterwarnings("ignore", module=r"torch(\.|$)")


def fail(message: str, code: int = 2) -> None:
    """Print ``message`` to stderr and exit with ``code`` (2 = bad input)."""
    err.print(f"[red]error:[/red] {message}", highlight=False)
    raise typer.Exit(code)


def _settings():
    from pydantic import ValidationError

    from relay.settings import get_settings

    try:
        return get_settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        fail(f"configuration: RELAY_{str(first['loc'][0]).upper()}: {first['msg']}")


def _read_change(ref: str):
    from relay.inputs import InputError, load_changeset

    try:
        return load_changeset(ref)
    except InputError as exc:
        fail(str(exc))


def _spec_files(spec: list[Path] | None) -> list[Path] | None:
    """``--spec`` values with directories expanded to their spec files (``None`` stays None)."""
    from relay.inputs import InputError, spec_files

    try:
        return spec_files(spec) if spec else None
    except InputError as exc:
        fail(str(exc))


def _git_change(ref: str, upstream: Path, settings, head_env: str | None, base_env: str | None):
    """``A..B`` (or one commit) in the checkout ``upstream``: the change set, its commits, and
    — with ``RELAY_COMMIT_ENV`` — the commit → environment resolver and both sides' environments
    (explicit ``--head-env`` / ``--base-env`` win)."""
    from relay.commit_envs import CommitEnvError, from_settings
    from relay.gitrange import GitRangeError, git_range

    try:
        found = git_range(upstream, ref, upstream=settings.upstream_repo)
        resolver = from_settings(settings)
        if resolver is not None and head_env is None:
            head_env = resolver.resolve(found.changeset.head)
            base_env = base_env or resolver.resolve(found.changeset.base)
    except (GitRangeError, CommitEnvError) as exc:
        fail(str(exc))
    commit_env = resolver.resolve if resolver is not None else None
    return found.changeset, found.commits, commit_env, head_env, base_env


@app.command()
def replay(
    ref: Annotated[str, typer.Argument(help="A ChangeSet JSON file (see examples/changes/), a version pair torch==X..torch==Y (runs head and base in those versions), or with --upstream a commit or range A..B of that checkout (bisected for a culprit when RELAY_COMMIT_ENV is set).")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the run as JSON on stdout.")] = False,
    spec: Annotated[Optional[list[Path]], typer.Option(help="Spec files or directories of them (default: the bundled specs).")] = None,
    backend: Annotated[str, typer.Option(help="Backend profile.")] = "spyre-sim",
    device: Annotated[str, typer.Option(help="Device the tests run on.")] = "spyre",
    timeout: Annotated[int, typer.Option(help="Per-test timeout, seconds.")] = 120,
    head_env: Annotated[Optional[str], typer.Option("--head-env", help="Environment of the head run: current, torch==X, a wheel path or URL, +faults=<SPYRE_SIM_FAULTS>.")] = None,
    base_env: Annotated[Optional[str], typer.Option("--base-env", help="Environment of the baseline (default: current when --head-env is given).")] = None,
    upstream: Annotated[Optional[Path], typer.Option("--upstream", exists=True, file_okay=False, help="A PyTorch checkout: run the specs' upstream test files (path: entries) from it.")] = None,
    shards: Annotated[int, typer.Option("--shards", min=1, help="Concurrent pytest processes.")] = 1,
    budget_minutes: Annotated[Optional[float], typer.Option("--budget-minutes", min=0, help="Run only the top-ranked tests fitting this much measured test time.")] = None,
) -> None:
    """Run the whole pipeline locally for one upstream change: select, run, store, report.

    Exit status: 0 when the run's conclusion is success or neutral, 1 when it is failure,
    2 for bad input.
    """
    from relay.environments import EnvironmentError_
    from relay.pipeline import SpecsInvalid, run_change
    from relay.render import BarProgress, print_outcome

    from relay.environments import validate, version_pair

    settings = _settings().model_copy(update={"backend": backend})
    for env_text in (head_env, base_env):
        if env_text is not None:
            try:
                validate(env_text)
            except EnvironmentError_ as exc:
                fail(str(exc))
    spec = _spec_files(spec)
    pair = version_pair(ref) if not Path(ref).exists() else None
    commits = commit_env = None
    if pair is not None:
        from relay.inputs import InputError, changeset_from_versions

        err.print(f"building the change set {pair[0]} → {pair[1]} from the release wheels …")
        try:
            changeset = changeset_from_versions(*pair, settings.state_dir / "wheels")
        except InputError as exc:
            fail(str(exc))
        head_env = head_env or pair[1]
        base_env = base_env or pair[0]
    elif upstream is not None and not Path(ref).exists():
        changeset, commits, commit_env, head_env, base_env = _git_change(
            ref, upstream, settings, head_env, base_env)
    else:
        changeset = _read_change(ref)
    progress = BarProgress(err)
    try:
        outcome = run_change(changeset, settings=settings, progress=progress, spec_paths=spec,
                             device=device, timeout_s=timeout, budget_minutes=budget_minutes,
                             head_env=head_env, base_env=base_env, shards=shards,
                             upstream=upstream, commits=commits, commit_env=commit_env)
    except (EnvironmentError_, SpecsInvalid) as exc:
        progress.close()
        fail(str(exc))
    finally:
        progress.close()
    skipped = sum(1 for t in outcome.selection.selected if t.mode == "skip")
    print_outcome(err, outcome, skipped_by_selection=skipped)
    if outcome.run.culprit is not None:
        c = outcome.run.culprit
        err.print(f"culprit: {c.commit} breaks {len(c.tests)} NEW tests "
                  f"(found in {c.rounds} rounds among {len(commits or [])} commits)", highlight=False)
        for step in c.steps:
            err.print(f"  tried {step.commit[:12]} ({step.environment}): "
                      f"{len(step.failed)} failed", highlight=False)
    if json_out:
        sys.stdout.write(outcome.run.model_dump_json(indent=1, by_alias=True) + "\n")
    if outcome.run.conclusion == "failure":
        raise typer.Exit(1)


@app.command()
def select(
    diff: Annotated[Optional[str], typer.Option("--diff", help="Unified diff (git diff output) file, or - for stdin.")] = None,
    files: Annotated[Optional[str], typer.Option("--files", help="GitHub PR-files JSON array, as-is (- = stdin).")] = None,
    changes: Annotated[Optional[str], typer.Option("--changes", help="A ChangeSet JSON file.")] = None,
    src_from: Annotated[Optional[str], typer.Option("--from", help="Old version: wheel, tree or REPO@REV (upgrade mode).")] = None,
    src_to: Annotated[Optional[str], typer.Option("--to", help="New version: wheel, tree or REPO@REV (upgrade mode).")] = None,
    upgrade: Annotated[Optional[bool], typer.Option("--upgrade/--pr", help="Selection mode (default: upgrade when base/head are versions).")] = None,
    budget_minutes: Annotated[Optional[float], typer.Option("--budget-minutes", min=0, help="Cut the ranked list to this much measured test time.")] = None,
    source_root: Annotated[Optional[Path], typer.Option("--source-root", help="PyTorch source tree for the source map (default: the installed torch).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the Selection as JSON on stdout.")] = False,
    spec: Annotated[Optional[list[Path]], typer.Option(help="Spec files or directories of them (default: the bundled specs).")] = None,
    backend: Annotated[str, typer.Option(help="Backend profile.")] = "spyre-sim",
) -> None:
    """Stages 1–3 only: print which tests a change selects, with reasons (design §4 with --json)."""
    from rich.markup import escape

    from relay.inputs import InputError, changeset_from_diff, changeset_from_pr_files, load_changeset
    from relay.pipeline import default_specs, load_items
    from relay.render import stage_table
    from selection.budget import durations_from_db
    from selection.pipeline import Selector, to_selection

    pair = src_from is not None or src_to is not None
    given = [x for x in (diff, files, changes) if x is not None] + ([True] if pair else [])
    if len(given) != 1 or (pair and (src_from is None or src_to is None)):
        fail("give exactly one of --diff, --files, --changes, or both --from and --to")
    try:
        if pair:
            from relay.changes import ChangeSourceError, build_changeset

            try:
                cs = build_changeset(src_from, src_to)
            except ChangeSourceError as exc:
                fail(str(exc))
        else:
            cs = (changeset_from_diff(diff) if diff is not None else
                  changeset_from_pr_files(files) if files is not None else load_changeset(changes))
    except InputError as exc:
        fail(str(exc))
    if upgrade is None:
        mode = "upgrade" if pair else "auto"  # two versions given: upgrade mode
    else:
        mode = "upgrade" if upgrade else "pr"
    settings = _settings()
    items = load_items(_spec_files(spec) or default_specs())
    try:
        selector = Selector(items, profile=backend, cache_dir=settings.state_dir / "index",
                            source_root=source_root)
    except KeyError as exc:
        fail(str(exc.args[0]))
    durations = durations_from_db(settings.database_url) if budget_minutes is not None else None
    state = selector.select_state(cs, mode=mode, budget_minutes=budget_minutes, durations=durations)
    selection = to_selection(state)
    if json_out:
        sys.stdout.write(selection.model_dump_json(indent=1, by_alias=True) + "\n")
        return
    err.print(f"mode: {state.mode}; {len(selection.selected)} of {selection.universe} selected "
              f"({len(selection.to_run)} to run)", highlight=False)
    err.print(stage_table(selection))
    for note in state.notes[:20]:
        err.print(f"[dim]note:[/dim] {escape(note)}", highlight=False)
    for t in selection.selected[:50]:
        why = escape(t.reasons[-1]) if t.reasons else ""
        err.print(f"{t.score:.2f} {t.mode:<17} {escape(t.id)}  [dim]{why}[/dim]", highlight=False)
    if len(selection.selected) > 50:
        err.print(f"… {len(selection.selected) - 50} more (use --json for all)")


@app.command()
def changes(
    src_from: Annotated[str, typer.Option("--from", help="Old wheel (.whl) or extracted tree.")],
    src_to: Annotated[str, typer.Option("--to", help="New wheel (.whl) or extracted tree.")],
    out: Annotated[Optional[Path], typer.Option(help="Write the ChangeSet here instead of stdout.")] = None,
    title: Annotated[str, typer.Option(help="Title recorded in the ChangeSet.")] = "",
) -> None:
    """Build a ChangeSet (files and changed top-level symbols) from two wheels or trees."""
    from relay.changes import ChangeSourceError, build_changeset

    try:
        cs = build_changeset(src_from, src_to, title=title)
    except ChangeSourceError as exc:
        fail(str(exc))
    text = cs.model_dump_json(indent=1, exclude_none=True) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        err.print(f"wrote {out}: {len(cs.files)} files")


@specs_app.command("check")
def specs_check(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Spec files or directories.")] = None,
    strict: Annotated[bool, typer.Option(help="Also require reason and issue on skip/xfail.")] = False,
) -> None:
    """Validate specs; print every error as file:line:col: message; exit 1 on any."""
    from relay.inputs import spec_files_in
    from test_specs.loader import check_specs

    targets: list[Path] = []
    for p in paths or [Path(__file__).resolve().parent.parent / "test_specs" / "specs"]:
        targets += spec_files_in(p) if p.is_dir() else [p]
    errors = check_specs(targets, strict=strict)
    for e in errors:
        typer.echo(e.format())
    if errors:
        err.print(f"{len(errors)} error(s) in {len(targets)} file(s)")
        raise typer.Exit(1)
    err.print(f"{len(targets)} spec file(s) OK")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 8000,
) -> None:
    """Serve the relay (webhooks, callbacks, dashboard) under uvicorn."""
    import uvicorn

    from relay.app import create_app
    from relay.errors import ConfigError

    settings = _settings()
    try:
        settings.require_webhook_secret()
        application = create_app(settings)
    except ConfigError as exc:
        fail(str(exc))
    uvicorn.run(application, host=host, port=port, log_level="info")


@app.command()
def worker(
    concurrency: Annotated[Optional[int], typer.Option("--concurrency", "-c", min=1, help="Pool processes (default: CPU count, at least 2).")] = None,
    loglevel: Annotated[str, typer.Option("--loglevel", "-l", help="Celery log level.")] = "INFO",
    hostname: Annotated[Optional[str], typer.Option("--hostname", "-n", help="Worker node name (default: celery@<host>).")] = None,
    pool: Annotated[str, typer.Option(help="Celery pool: prefork, threads or solo.")] = "prefork",
) -> None:
    """A Celery worker running deliveries and test shards (needs RELAY_BROKER_URL and, across
    machines, a shared RELAY_DATABASE_URL such as PostgreSQL)."""
    from pydantic import ValidationError

    from relay.errors import ConfigError

    try:
        from relay.distributed.config import DistributedSettings
        from relay.distributed.worker import start_worker
    except ImportError as exc:
        fail(f"relay worker needs Celery: pip install 'celery[redis]' ({exc})")
    try:
        settings = DistributedSettings()
        settings.require_broker()
    except ValidationError as exc:
        first = exc.errors()[0]
        fail(f"configuration: RELAY_{str(first['loc'][0]).upper()}: {first['msg']}")
    except ConfigError as exc:
        fail(str(exc))
    if pool not in ("prefork", "threads", "solo"):
        fail(f"--pool must be prefork, threads or solo, not {pool!r}")
    start_worker(settings, concurrency=concurrency, loglevel=loglevel, hostname=hostname, pool=pool)


@app.command()
def quarantine(
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout.")] = False,
) -> None:
    """Evaluate flaky-test quarantine (PyTorch HUD style) on RELAY_DATABASE_URL now: propose
    disabling tests flaky in too many main-branch runs (DISABLED issues in
    RELAY_QUARANTINE_REPO) and re-enabling long-green ones; prints the proposals.

    Exit status: 0, or 1 when a GitHub call failed (retried by the next evaluation), 2 for bad
    configuration or an unusable database.
    """
    from rich.table import Table
    from sqlalchemy.exc import SQLAlchemyError

    from relay.quarantine import evaluate
    from relay.store import create_schema, make_engine, make_session_factory

    settings = _settings()
    try:
        engine = make_engine(settings.database_url)
        try:
            create_schema(engine)
            with make_session_factory(engine)() as session:
                report = evaluate(session, settings)
        finally:
            engine.dispose()
    except SQLAlchemyError as exc:
        fail(f"database {settings.database_url}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    table = Table(title=f"quarantine at {report.evaluated_at:%Y-%m-%d %H:%M} UTC "
                        f"({report.quarantined} quarantined)")
    for column in ("proposal", "test", "why", "issue"):
        table.add_column(column)
    for p in report.disabled + report.reenabled:
        table.add_row(p.action, p.test_id, p.reason,
                      (p.issue_url or "-") + (" (adopted)" if p.issue_adopted else ""))
    err.print(table if table.rows else "no new proposals")
    for line in report.errors:
        err.print(f"[yellow]github:[/yellow] {line}", highlight=False)
    if json_out:
        sys.stdout.write(report.model_dump_json(indent=1) + "\n")
    if report.errors:
        raise typer.Exit(1)


@app.command("catch-up")
def catch_up_cmd(
    repo: Annotated[Optional[str], typer.Option("--repo", help="owner/name of the repository whose webhook delivers to this relay (default: RELAY_UPSTREAM_REPO).")] = None,
    hook_id: Annotated[Optional[int], typer.Option("--hook-id", min=1, help="The repository webhook's id (default: RELAY_CATCHUP_HOOK_ID).")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="ISO 8601 time to look back to (default: the newest stored delivery of the hook less 10 min); at most 3 days back, GitHub's limit.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout.")] = False,
) -> None:
    """Ask GitHub to redeliver the webhook deliveries this relay missed (down, or answered an
    error): lists the hook's deliveries, skips those stored in RELAY_DATABASE_URL, redelivers
    each failed one once.  Needs a token with admin rights on the repository.

    Exit status: 0, 1 when GitHub refused (unknown hook, listing or a redelivery failed),
    2 for bad input or configuration.
    """
    from rich.table import Table
    from sqlalchemy.exc import SQLAlchemyError

    from relay.catchup import catch_up_from_settings, parse_since
    from relay.errors import ConfigError, GitHubAPIError
    from relay.store import create_schema, make_engine, make_session_factory

    settings = _settings()
    try:
        start = parse_since(since) if since is not None else None
        engine = make_engine(settings.database_url)
        try:
            create_schema(engine)
            report = catch_up_from_settings(make_session_factory(engine), settings, repo=repo,
                                            hook_id=hook_id, since=start)
        finally:
            engine.dispose()
    except (ValueError, ConfigError) as exc:
        fail(str(exc))
    except GitHubAPIError as exc:
        fail(str(exc), 1)
    except SQLAlchemyError as exc:
        fail(f"database {settings.database_url}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    table = Table(title=f"catch-up of webhook {report.hook_id} on {report.repo} since "
                        f"{report.since:%Y-%m-%d %H:%M} UTC ({report.listed} attempts listed)")
    for column in ("outcome", "deliveries (X-GitHub-Delivery)"):
        table.add_column(column)
    for outcome, guids in (("redelivered", report.redelivered), ("already stored", report.stored),
                           ("delivered elsewhere", report.delivered)):
        if guids:
            table.add_row(outcome, f"{len(guids)}: " + ", ".join(guids[:5])
                          + (" …" if len(guids) > 5 else ""))
    for failure in report.failed:
        table.add_row("[red]refused[/red]", f"{failure.guid}: {failure.error}")
    err.print(table if table.rows else "nothing missed")
    if json_out:
        sys.stdout.write(report.model_dump_json(indent=1) + "\n")
    if report.failed:
        raise typer.Exit(1)


@db_app.command("upgrade")
def db_upgrade(revision: Annotated[str, typer.Argument(help="Target revision.")] = "head") -> None:
    """Apply the Alembic migrations to RELAY_DATABASE_URL (the relay also does so at start)."""
    from alembic import command

    from relay.store.db import alembic_config

    command.upgrade(alembic_config(_settings().database_url), revision)
    err.print(f"database at {revision}")


def main() -> None:  # pragma: no cover - console script entry
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
