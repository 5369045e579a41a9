"""Flakiness evidence: what may turn a failure into a FLAKY verdict, and nothing else.

PyTorch's Dr. CI calls a failure FLAKY only on evidence a reviewer can open (pytorch/test-infra
``torchci/pages/api/drci/drci.ts``, ``getWorkflowJobsStatuses``: the related job or the disable
issue is printed next to the failure).  Ours, in the order ``relay.domain.verdicts.classify``
applies them:

1. **rerun** — the test failed, then passed on a rerun *in this run* (PyTorch CI reruns a failing
   test and calls failed-then-passed flaky; outcome ``flaky``).
2. **quarantine** — the test has a ``DISABLED <test id>`` record (``relay.quarantine.policy``,
   HUD's disable-flaky-tests flow); the evidence is the issue and the main-branch runs it was
   flaky in.
3. **trunk flips** — its outcome flipped between ``passed`` and ``failed`` in *trunk* runs with no
   change in between (HUD's ``flaky_workflows_jobs`` query: a green / red / green pattern of one job
   on trunk commits).  ``TrunkResult`` is one such stored outcome:

   * trunk = a run of the configured main ref (``RELAY_QUARANTINE_MAIN_REF``) made for a push or
     a replay, never for a pull request (``relay.store.regression.trunk_runs``), on the same
     backend; a PR head's outcome is never trunk history;
   * same environment = the run's head environment has the same name as this run's, each with its
     own head commit written ``{sha}`` (a per-commit wheel template compares equal), and it injects
     no simulated regression (``injects_regression``: only ``flaky=P`` faults, which simulate
     non-determinism, are allowed);
   * no change in between = the two runs tested the *same upstream head commit* on the *same
     torch build* (``TrunkResult.build``: environment name, torch version, git version, wheel
     sha256).  We store no per-test reason for a trunk run's selection, and a test is in a trunk
     run only because selection tied that run's change to it (or kept it failing soft), so any
     other commit counts as a change to the test or its ops: runs of different commits never
     make a flip, whatever their order.

   A flip counts only between consecutive such runs of one (commit, build); the failure being
   judged must be the *same failure* as a failed side of a flip (first message line equal, Dr.
   CI's ``isSameFailure``), so a test that is flaky on trunk but now fails differently is NEW.

When in doubt the answer is "not FLAKY": a missing message, a missing environment record or a gap
between commits all count as no evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["FlakyBy", "TrunkResult", "Flip", "QuarantineNote", "trunk_flips", "injects_regression",
           "env_key", "same_failure", "first_line", "FLIP_OUTCOMES", "NONDETERMINISTIC_FAULTS"]

#: which rule made a verdict FLAKY (``Verdict.flaky_by``)
FlakyBy = Literal["rerun", "quarantine", "trunk_flips"]
#: outcomes whose changes are flips: a crash or timeout is infra, an xfail or skip says nothing
FLIP_OUTCOMES = ("passed", "failed")
#: ``spyre_backend.faults`` kinds that simulate non-determinism rather than a regression
NONDETERMINISTIC_FAULTS = frozenset({"flaky"})
SHA_PLACEHOLDER = "{sha}"


@dataclass(frozen=True)
class TrunkResult:
    """One stored outcome of a test in a trunk run (``relay.store.regression.trunk_history``).

    ``head``: the upstream commit the run tested; ``build``: the torch build its head environment
    ran (name | version | git version | wheel sha256); ``outcome``: ``passed`` or ``failed``;
    ``message``: the first line of the failure, if any."""

    run_id: str
    head: str
    build: str
    outcome: str
    message: str | None = None


@dataclass(frozen=True)
class Flip:
    """Two consecutive trunk runs of one commit and build whose outcomes differ."""

    before: TrunkResult
    after: TrunkResult

    @property
    def failed(self) -> TrunkResult:
        """The failed side of the flip."""
        return self.before if self.before.outcome == "failed" else self.after


@dataclass(frozen=True)
class QuarantineNote:
    """A quarantined test: ``issue`` is ``DISABLED <id> (<url or 'no issue filed'>)``, ``runs``
    the main-branch runs it was flaky in when it was disabled (empty for records older than
    migration 0007, whose issue lists them)."""

    issue: str
    runs: tuple[str, ...] = ()


def first_line(message: str | None) -> str:
    """The first non-blank line of a failure message, whitespace collapsed ('' when none)."""
    for line in (message or "").splitlines():
        if line.strip():
            return " ".join(line.split())
    return ""


def same_failure(a: str | None, b: str | None) -> bool:
    """Whether two failure messages name the same failure (first lines equal, both non-empty),
    as Dr. CI's ``isSameFailure`` compares failure captures."""
    la, lb = first_line(a), first_line(b)
    return bool(la) and la == lb


def injects_regression(faults: str | None) -> bool:
    """Whether a ``SPYRE_SIM_FAULTS`` value injects a simulated regression: any entry whose kind
    is not in ``NONDETERMINISTIC_FAULTS`` (``offset=``, ``nan``, ``raise``, ``abort``, ``hang``,
    or one we cannot read — counted as a regression, so its runs are never trunk history)."""
    for entry in (faults or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        kind, _, value = entry.rpartition(":")[2].partition("=")
        if kind.strip() not in NONDETERMINISTIC_FAULTS or not _probability(value):
            return True
    return False


def _probability(text: str) -> bool:
    """Whether ``text`` reads as a probability in [0, 1] (a ``flaky=P`` value)."""
    try:
        return 0.0 <= float(text) <= 1.0
    except ValueError:
        return False


def env_key(name: str, head: str | None) -> str:
    """An environment name with the run's own head commit written ``{sha}``, so the environments
    a per-commit template gives two commits compare equal (``relay.envs.commits``)."""
    return name.replace(head, SHA_PLACEHOLDER) if head and len(head) >= 7 else name


def trunk_flips(history: Sequence[TrunkResult]) -> list[Flip]:
    """The flips in ``history`` (oldest first): consecutive results of the same (head commit,
    build) whose outcomes differ between ``passed`` and ``failed``; other outcomes are skipped."""
    last: dict[tuple[str, str], TrunkResult] = {}
    flips: list[Flip] = []
    for r in history:
        if r.outcome not in FLIP_OUTCOMES:
            continue
        key = (r.head, r.build)
        prev = last.get(key)
        if prev is not None and prev.outcome != r.outcome:
            flips.append(Flip(prev, r))
        last[key] = r
    return flips
