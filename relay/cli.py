"""The ``relay`` command line (design §3): serve, replay, select, changes, specs check.

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


@app.command()
def replay(
    ref: Annotated[str, typer.Argument(help="A ChangeSet JSON file (see examples/changes/), or a version pair torch==X..torch==Y (runs head and base in those versions).")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the run as JSON on stdout.")] = False,
    spec: Annotated[Optional[list[Path]], typer.Option(help="Spec files (default: the bundled specs).")] = None,
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
    pair = version_pair(ref) if not Path(ref).exists() else None
    if pair is not None:
        from relay.inputs import InputError, changeset_from_versions

        err.print(f"building the change set {pair[0]} → {pair[1]} from the release wheels …")
        try:
            changeset = changeset_from_versions(*pair, settings.state_dir / "wheels")
        except InputError as exc:
            fail(str(exc))
        head_env = head_env or pair[1]
        base_env = base_env or pair[0]
    else:
        changeset = _read_change(ref)
    progress = BarProgress(err)
    try:
        outcome = run_change(changeset, settings=settings, progress=progress, spec_paths=spec,
                             device=device, timeout_s=timeout, budget_minutes=budget_minutes,
                             head_env=head_env, base_env=base_env, shards=shards,
                             upstream=upstream)
    except (EnvironmentError_, SpecsInvalid) as exc:
        progress.close()
        fail(str(exc))
    finally:
        progress.close()
    skipped = sum(1 for t in outcome.selection.selected if t.mode == "skip")
    print_outcome(err, outcome, skipped_by_selection=skipped)
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
    spec: Annotated[Optional[list[Path]], typer.Option(help="Spec files (default: the bundled specs).")] = None,
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
    items = load_items(spec or default_specs())
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
    from test_specs.loader import check_specs

    targets: list[Path] = []
    for p in paths or [Path(__file__).resolve().parent.parent / "test_specs" / "specs"]:
        targets += sorted(p.rglob("*.yaml")) + sorted(p.rglob("*.yml")) if p.is_dir() else [p]
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
