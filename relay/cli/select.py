"""``relay select``: stages 1–3 of selection on one change, no tests run (design §3, §4)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from relay.cli.common import RelayCommand, app, err, fail, settings_or_fail, spec_files_or_fail


def _select_change(ref: str | None, diff: str | None, files: str | None, changes: str | None,
                   src_from: str | None, src_to: str | None, upstream: Path | None):
    """The ChangeSet ``relay select`` was given (exactly one source), or the command ends with a
    message: REF is detected by content (or, with ``--upstream``, a commit or range)."""
    from relay.changes.inputs import InputError, changeset_from_diff, changeset_from_pr_files, load_changeset
    from relay.cli.common import read_change_or_fail

    pair = src_from is not None or src_to is not None
    given = [x for x in (ref, diff, files, changes) if x is not None] + ([True] if pair else [])
    if len(given) != 1 or (pair and (src_from is None or src_to is None)):
        fail("give exactly one change: REF (a ChangeSet, PR-files JSON or diff file; with --upstream "
             "a commit or range), --diff, --files, --changes, or both --from and --to")
    if pair:
        from relay.changes import ChangeSourceError, build_changeset

        try:
            return build_changeset(src_from, src_to)
        except ChangeSourceError as exc:
            fail(str(exc))
    if ref is not None:
        if upstream is not None and ref != "-" and not Path(ref).exists():
            from relay.changes.gitrange import git_range
            from relay.errors import GitRangeError

            try:
                return git_range(upstream, ref, upstream=settings_or_fail().upstream_repo).changeset
            except GitRangeError as exc:
                fail(str(exc))
        return read_change_or_fail(ref)
    try:
        return (changeset_from_diff(diff) if diff is not None else
                changeset_from_pr_files(files) if files is not None else load_changeset(changes))
    except InputError as exc:
        fail(str(exc))


_HELP = """Print which tests a change selects, with reasons (no run).

Stages 1-3 only; the table goes to stderr, --json prints the Selection (design §4) on stdout.

\b
Examples:
  relay select examples/changes/pr-softmax.json --spec test_specs/specs/opinfo_core.yaml
  git diff | relay select --diff -
  relay select --from torch-2.13.0.whl --to torch-2.14.1.whl --json
"""


@app.command(cls=RelayCommand, help=_HELP)
def select(
    ref: Annotated[str | None, typer.Argument(
        help="A change file — ChangeSet JSON, GitHub PR-files JSON or unified diff, told apart by content (- ="
        " stdin) — or with --upstream a commit or range A..B.")] = None,
    diff: Annotated[str | None, typer.Option(
        "--diff", help="Unified diff (git diff output) file, or - for stdin.")] = None,
    files: Annotated[str | None, typer.Option("--files", help="GitHub PR-files JSON array, as-is (- = stdin).")] = None,
    changes: Annotated[str | None, typer.Option("--changes", help="A ChangeSet JSON file.")] = None,
    src_from: Annotated[str | None, typer.Option(
        "--from", help="Old version: wheel, tree or REPO@REV (upgrade mode).")] = None,
    src_to: Annotated[str | None, typer.Option(
        "--to", help="New version: wheel, tree or REPO@REV (upgrade mode).")] = None,
    upstream: Annotated[Path | None, typer.Option(
        "--upstream", exists=True, file_okay=False,
        help="A PyTorch checkout REF's commit or range is read from, and the kernels a changed native "
        "file defines (default RELAY_UPSTREAM_CHECKOUT).")] = None,
    upgrade: Annotated[bool | None, typer.Option(
        "--upgrade/--pr", help="Selection mode (default: upgrade when base/head are versions).")] = None,
    budget_minutes: Annotated[float | None, typer.Option(
        "--budget-minutes", min=0, help="Cut the ranked list to this much measured test time.")] = None,
    source_root: Annotated[Path | None, typer.Option(
        "--source-root", help="PyTorch source tree for the source map (default: the installed torch).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the Selection as JSON on stdout.")] = False,
    spec: Annotated[list[Path] | None, typer.Option(
        help="Spec files or directories of them (default: the bundled specs).")] = None,
    backend: Annotated[str, typer.Option(help="Backend profile.")] = "spyre-sim",
) -> None:
    """Stages 1–3 only: print which tests a change selects (help: ``_HELP``)."""
    from rich.markup import escape

    from relay.cli.render import BarProgress, stage_table
    from relay.errors import SpecsInvalid
    from relay.pipeline.indexing import build_selector
    from relay.pipeline.specs import default_specs, load_items
    from selection.pipeline import to_selection

    cs = _select_change(ref, diff, files, changes, src_from, src_to, upstream)
    pair = src_from is not None
    if upgrade is None:
        mode = "upgrade" if pair else "auto"  # two versions given: upgrade mode
    else:
        mode = "upgrade" if upgrade else "pr"
    settings = settings_or_fail()
    try:
        items = load_items(spec_files_or_fail(spec) or default_specs(), cache_dir=settings.state_dir / "index")
    except SpecsInvalid as exc:
        fail(str(exc))
    progress = BarProgress(err)
    try:
        selector = build_selector(items, profile=backend, cache_dir=settings.state_dir / "index",
                                  progress=progress, source_root=source_root,
                                  upstream_checkout=upstream or settings.upstream_checkout)
    except KeyError as exc:
        fail(str(exc.args[0]))
    finally:
        progress.close()
    durations = None
    if budget_minutes is not None:
        from relay.store.durations import durations_from_db  # SQLAlchemy: seconds; only for a budget

        durations = durations_from_db(settings.database_url)
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
