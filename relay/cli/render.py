"""Human output of the CLI: the replay progress bar and summary tables (rich, to stderr).

``--json`` output never passes through here: it goes to stdout untouched (design §3).
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from relay.domain.outcomes import bad_results
from relay.domain.run import Run
from relay.domain.verdicts import count
from relay.pipeline.ports import Progress as PipelineProgress
from relay.pipeline.request import RunOutcome
from selection.models import Selection, StageStats
from test_specs.results import OUTCOMES, TestResult


class BarProgress(PipelineProgress):
    """Draws phases as status lines and test execution as a progress bar on ``console``."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TextColumn("{task.fields[last]}"),
                            TimeElapsedColumn(), console=console, transient=False)
        self.task: int | None = None
        self.done: set[str] = set()

    def phase(self, name: str) -> None:
        if name == "running tests":
            self.bar.start()
        elif self.task is not None and name == "refining":
            self.bar.stop()
        self.console.log(f"{name} …")

    def total(self, n: int) -> None:
        self.task = self.bar.add_task("tests", total=n, last="")

    def result(self, result: TestResult) -> None:
        if self.task is None:
            return
        if result.id in self.done:  # a rerun: show it, do not advance past the total
            self.bar.update(self.task, last=escape(f"rerun {result.id}: {result.outcome}"))
            return
        self.done.add(result.id)
        self.bar.update(self.task, advance=1, last=escape(f"{result.outcome}: {result.id}"[:60]))

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
    if run.environments:
        console.print(verdict_table(run))
        for role in ("head", "base"):
            env = run.environments.get(role, {})
            console.print(f"{role}: {env.get('name')} (torch {env.get('torch_version')}, "
                          f"git {str(env.get('torch_git_version'))[:12]})", highlight=False)
        for v in run.verdicts:
            if v.verdict in ("NEW", "INFRA"):
                console.print(f"[red]{v.verdict}[/red] {escape(v.id)}: {escape(v.reason)}", highlight=False)
    console.print(f"{skipped_by_selection} selected tests classified skip (not run); "
                  f"{run.selected} run; stored in the database as run {run.id}")
    for note in outcome.notes[:10]:
        console.print(f"[dim]note: {escape(note)}[/dim]", highlight=False)
    for path in outcome.proposals:
        console.print(f"proposed spec edits (review, not applied): {path}")
    failed = bad_results(run.results)
    for r in failed[:15]:
        first = (r.message or "").splitlines()[0][:160] if r.message else ""
        console.print(f"[red]{r.outcome}[/red] {escape(r.id)}: {escape(first)}", highlight=False)
    if len(failed) > 15:
        console.print(f"… and {len(failed) - 15} more")
    if outcome.report_error:
        console.print(f"[yellow]dashboard post failed: {outcome.report_error}[/yellow]")


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
