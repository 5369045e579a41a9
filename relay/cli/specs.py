"""``relay specs check`` and ``relay specs apply``: validate specs, apply a run's spec
write-back (design §3)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from relay.cli.common import RelayCommand, err, fail, settings_or_fail, spec_files_or_fail, specs_app


@specs_app.command("check", cls=RelayCommand)
def specs_check(
    paths: Annotated[list[Path] | None, typer.Argument(help="Spec files or directories.")] = None,
    strict: Annotated[bool, typer.Option(help="Also require a reason (key or comment) on skip/xfail.")] = False,
    results: Annotated[Path | None, typer.Option(
        "--results", exists=True, dir_okay=False,
        help="A run's results (relay run --json, relay replay --json, results.jsonl): report stale xfails.")] = None,
) -> None:
    """Check specs: every error as file:line:col: message.

    Exit 1 on any error.  Warnings (file:line:col: warning: ..., each with its edit: dtypes the
    Spyre device refuses, dead patterns, duplicates, shadowed entries, and with --results the
    xfail items that passed) never change the exit.

    \b
    Examples:
      relay specs check test_specs/specs
      relay specs check --strict my_config.yaml
      relay specs check test_specs/specs --results .relay/runs/<id>/results.jsonl
    """
    from relay.pipeline.specs import default_specs
    from test_specs.authoring.check import check_specs
    from test_specs.authoring.device_dtypes import dtype_warnings
    from test_specs.authoring.hygiene import read_results

    targets = spec_files_or_fail(paths) if paths else default_specs()
    outcomes = None
    if results is not None:
        try:
            outcomes = read_results(results)
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            fail(str(exc))
    errors = check_specs(targets, strict=strict)
    for e in errors:
        typer.echo(e.format())
    warnings = dtype_warnings(targets) + ([] if errors else _hygiene(targets, outcomes))
    for w in warnings:
        typer.echo(w.format())
    if errors:
        err.print(f"{len(errors)} error(s) in {len(targets)} file(s)")
        raise typer.Exit(1)
    err.print(f"{len(targets)} spec file(s) OK" + (f", {len(warnings)} warning(s)" if warnings else ""))


def _hygiene(targets: list[Path], outcomes: dict[str, str] | None) -> list:
    """Hygiene warnings of every ``source:`` spec in ``targets`` (``test_specs.authoring.hygiene``)."""
    from test_specs.authoring.hygiene import hygiene_warnings, stale_xfails
    from test_specs.format.loader import parse_spec

    out = []
    for f in targets:
        spec, errs = parse_spec(f)
        if spec is None or errs or not any(fe.source is not None for fe in spec.config.files):
            continue
        out += hygiene_warnings(spec)
        if outcomes is not None:
            out += stale_xfails(spec, outcomes)
    return sorted(set(out))


@specs_app.command("apply", cls=RelayCommand)
def specs_apply(
    proposal: Annotated[str, typer.Argument(
        help="A run's spec-proposal.patch (.relay/runs/<id>/), or a stored run's id.")],
    root: Annotated[Path | None, typer.Option(
        "--root", exists=True, file_okay=False,
        help="Apply from this directory (default: the proposal's root: line).")] = None,
) -> None:
    """Apply a run's proposed spec edit; check the patched specs.

    Applies stage 4's spec write-back with git apply from the root it names; exit 1 if it
    does not apply (nothing changed) or a patched spec has errors.

    \b
    Examples:
      relay specs apply .relay/runs/RUN_ID/spec-proposal.patch
      relay specs apply RUN_ID --root ~/torch-spyre
    """
    from relay.errors import InputError
    from relay.pipeline.writeback import apply_proposal
    from test_specs.authoring.check import check_specs

    text = _proposal_text(proposal)
    try:
        files = apply_proposal(text, root)
    except InputError as exc:
        fail(str(exc))
    for f in files:
        err.print(f"patched {f}")
    errors = check_specs(files)
    for e in errors:
        typer.echo(e.format())
    if errors:
        raise typer.Exit(1)


def _proposal_text(proposal: str) -> str:
    """The text of a proposal file, or of the stored run ``proposal``'s write-back."""
    path = Path(proposal)
    if path.is_file():
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"{proposal}: cannot read the proposal: {exc}")
    from sqlalchemy.exc import SQLAlchemyError

    from relay.errors import RunNotFound
    from relay.store import load_run, make_engine, make_session_factory

    engine = make_engine(settings_or_fail().database_url)
    try:
        with make_session_factory(engine)() as session:
            run = load_run(session, proposal)
    except (RunNotFound, SQLAlchemyError):
        fail(f"{proposal}: neither a proposal file nor a stored run id")
    finally:
        engine.dispose()
    if not run.spec_proposal:
        fail(f"run {proposal} proposed no spec edit")
    return run.spec_proposal
