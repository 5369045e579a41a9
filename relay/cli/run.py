"""``relay replay``, ``relay select``, ``relay changes`` and ``relay specs check``: the pipeline
commands (design §3)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from relay.cli.common import app, err, fail, settings_or_fail, specs_app

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

    settings = settings_or_fail().model_copy(update={"backend": backend})
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
    from relay.store.durations import durations_from_db
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
    settings = settings_or_fail()
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
    from relay.pipeline import default_specs
    from test_specs.check import check_specs

    targets = _spec_files(paths) if paths else default_specs()
    errors = check_specs(targets, strict=strict)
    for e in errors:
        typer.echo(e.format())
    if errors:
        err.print(f"{len(errors)} error(s) in {len(targets)} file(s)")
        raise typer.Exit(1)
    err.print(f"{len(targets)} spec file(s) OK")
