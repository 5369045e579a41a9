"""Human output of the CLI: the replay progress bar and summary tables (rich, to stderr).

``--json`` output never passes through here: it goes to stdout untouched (design §3).
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from relay.domain.outcomes import bad_results
from relay.domain.run import Run
from relay.domain.verdicts import count
from relay.pipeline.ports import Progress as PipelineProgress
from relay.pipeline.request import RunOutcome
from selection.models import Selection, StageStats
from test_specs.values.results import OUTCOMES, TestResult


class BarProgress(PipelineProgress):
    """Draws phases as status lines, counted steps (the index capture) as a bar with its ETA,
    and test execution as a bar whose text is the running totals by outcome — so the line left
    on screen when the bar stops reads ``tests ━━━ 6/6 2 passed · 2 failed · 2 xfailed``."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TextColumn("{task.fields[last]}"),
                            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                            console=console, transient=False)
        self.task: int | None = None
        self.steps: dict[str, int] = {}  # counted step name -> its bar task
        self.outcomes: dict[str, str] = {}  # test id -> outcome of its latest attempt

    def phase(self, name: str) -> None:
        if name == "running tests":
            self.bar.start()
        elif self.task is not None and name == "refining":
            self.bar.stop()
        self.console.log(f"{name} …")

    def count(self, name: str, done: int, total: int) -> None:
        """A bar with an ETA for a counted step; stopped and dropped when it completes."""
        if name not in self.steps:
            self.steps[name] = self.bar.add_task(name, total=total, last="")
            self.bar.start()
        task = self.steps[name]
        self.bar.update(task, completed=done, total=total)
        if done >= total:
            self.bar.stop()
            self.bar.remove_task(task)
            del self.steps[name]

    def total(self, n: int) -> None:
        self.task = self.bar.add_task("tests", total=n, last="")

    def totals(self) -> str:
        """The tests finished so far per outcome (a rerun's outcome replaces the first), in
        ``OUTCOMES`` order: ``2 passed · 1 failed``."""
        tally = {o: 0 for o in OUTCOMES}
        for outcome in self.outcomes.values():
            tally[outcome] = tally.get(outcome, 0) + 1
        return " · ".join(f"{n} {o}" for o, n in tally.items() if n)

    def result(self, result: TestResult) -> None:
        if self.task is None:
            return
        rerun = result.id in self.outcomes
        self.outcomes[result.id] = result.outcome
        self.bar.update(self.task, advance=0 if rerun else 1, last=escape(self.totals()))

    def close(self) -> None:
        self.bar.stop()


def stage_table(selection: Selection, stages: list[StageStats] | None = None) -> Table:
    """Per stage: in, out, ms (``stages`` default: the selection's, i.e. stages 1–3)."""
    table = Table(title=f"selection (universe {selection.universe})")
    for col in ("stage", "in", "out", "ms"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for s in stages if stages is not None else selection.stages:
        table.add_row(s.name, str(s.in_), str(s.out), f"{s.ms:.1f}")
    return table


def outcome_table(run: Run) -> Table:
    """Per outcome: count of tests (zeros included for the five main outcomes)."""
    table = Table(title=f"run {run.id}: {run.conclusion}", min_width=len(run.id) + 20)
    table.add_column("outcome")
    table.add_column("tests", justify="right")
    main = ("passed", "failed", "xfailed", "skipped", "flaky")
    for outcome in OUTCOMES:
        n = run.counts.get(outcome, 0)
        if n or outcome in main:
            table.add_row(outcome, str(n))
    return table


def verdict_table(run: Run) -> Table:
    """Per verdict class: count of tests, and the environments compared."""
    table = Table(title="verdicts")
    table.add_column("verdict")
    table.add_column("tests", justify="right")
    for kind, n in count(run.verdicts).items():
        table.add_row(kind, str(n))
    return table


def print_outcome(console: Console, outcome: RunOutcome, *, skipped_by_selection: int) -> None:
    """The replay summary: stage table, outcome table, verdicts, notes, proposals, failures."""
    run = outcome.run
    console.print(stage_table(outcome.selection, run.stages))
    console.print(outcome_table(run))
    if "base" in run.environments:
        console.print(verdict_table(run))
    print_ran_on(console, run)
    print_named(console, run)
    console.print(f"{skipped_by_selection} selected tests classified skip (not run); "
                  f"{run.selected} run; stored in the database as run {run.id}")
    if run.reruns_skipped:
        console.print(f"{run.reruns_skipped} failures not rerun: deterministic device refusals "
                      "(a rerun cannot change them)", highlight=False)
    for note in outcome.notes[:10]:
        console.print(f"[dim]note: {escape(note)}[/dim]", highlight=False)
    for path in outcome.proposals:
        console.print(f"proposed spec edits (a patch; review, then: relay specs apply {path})",
                      highlight=False)
    failed = bad_results(run.results)
    for r in failed[:15]:
        first = (r.message or "").splitlines()[0][:160] if r.message else ""
        console.print(f"[red]{r.outcome}[/red] {escape(r.id)}: {escape(first)}", highlight=False)
    if len(failed) > 15:
        console.print(f"… and {len(failed) - 15} more")
    if outcome.report_error:
        console.print(f"[yellow]dashboard post failed: {outcome.report_error}[/yellow]")


def print_ran_on(console: Console, run: Run) -> None:
    """Which torch each side ran on (the run's ``environments``); a run without a base says so,
    and the flags that run each side in its own torch (with the change's own versions when its
    head and base are ``torch==X`` labels)."""
    for role in ("head", "base"):
        env = run.environments.get(role)
        if env:
            installed = " — the installed torch" if str(env.get("name", "")).startswith("current") else ""
            console.print(f"{role} ran on torch {env.get('torch_version')} ({env.get('name')}{installed}, "
                          f"git {str(env.get('torch_git_version'))[:12]})", highlight=False, markup=False,
                          soft_wrap=True)
    if "base" not in run.environments:
        versions = run.base.startswith("torch==") and run.head.startswith("torch==")
        example = (f"--head-env {run.head} --base-env {run.base}" if versions
                   else "--head-env current+faults=... --base-env current")
        console.print(f"no base run: {run.head} is only the change's label; add --head-env ENV "
                      f"--base-env ENV to run each side in its own torch (here: {example})",
                      highlight=False, markup=False, soft_wrap=True)


class DownloadBars:
    """``progress(name, done, total)`` for ``relay.envs.download``: one bar per file with the
    bytes, the total, the rate and the time left (live on a terminal; the final state in a log).
    Use as a context manager."""

    def __init__(self, console: Console) -> None:
        self._bars = Progress(TextColumn("downloading {task.description}"), BarColumn(), DownloadColumn(),
                              TransferSpeedColumn(), TimeRemainingColumn(), console=console)
        self._tasks: dict[str, int] = {}

    def __enter__(self) -> DownloadBars:
        self._bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bars.stop()

    def __call__(self, name: str, done: int, total: int | None) -> None:
        if name not in self._tasks:
            self._tasks[name] = self._bars.add_task(name, total=total)
        self._bars.update(self._tasks[name], completed=done, total=total)


#: how many tests of one kind the summary names before "… and N more"
NAMED = 15
_STYLE = {"NEW": "red", "INFRA": "red", "FLAKY": "yellow"}


def print_named(console: Console, run: Run) -> None:
    """Name the tests a reader must look at: NEW, FLAKY and INFRA verdicts with their reasons
    (a run with a baseline), else the ``flaky`` results (failed, then passed on a rerun)."""
    if run.verdicts:
        named = [(v.verdict, v.id, v.reason) for kind in ("NEW", "FLAKY", "INFRA")
                 for v in run.verdicts if v.verdict == kind]
    else:
        named = [("FLAKY", r.id, f"failed, then passed on a rerun ({r.attempts} attempts)")
                 for r in run.results if r.outcome == "flaky"]
    shown: dict[str, int] = {}
    for kind, test_id, reason in named:
        shown[kind] = shown.get(kind, 0) + 1
        if shown[kind] <= NAMED:
            style = _STYLE[kind]
            console.print(f"[{style}]{kind}[/{style}] {escape(test_id)}: {escape(reason)}", highlight=False)
    for kind, n in shown.items():
        if n > NAMED:
            console.print(f"… and {n - NAMED} more {kind}", highlight=False)


def print_culprit(console: Console, run: Run, commits: int) -> None:
    """The culprit line and its bisection rounds, when the run has a culprit."""
    c = run.culprit
    if c is None:
        return
    console.print(f"culprit: {c.commit} breaks {len(c.tests)} NEW tests "
                  f"(found in {c.rounds} rounds among {commits} commits)", highlight=False)
    for step in c.steps:
        console.print(f"  tried {step.commit[:12]} ({step.environment}): "
                      f"{len(step.failed)} failed", highlight=False)
