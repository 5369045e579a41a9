"""Culprit finding: bisect a push range for the first commit that makes NEW failures fail.

Given the range's commits oldest → newest, where the base before ``commits[0]`` is known good and
``commits[-1]`` known bad for ``tests``, each round runs *only* those tests at the midpoint
commit (through ``run``) and halves the range.  ``n`` commits take at most ⌈log2 n⌉ rounds
(16 → 4).  A round whose tests all pass moves the good end; any failure moves the bad end.
``relay.pipeline.bisection.find_culprit`` runs it for a stored run (each round in the commit's
environment); the result is stored by ``relay.store.culprits`` and shown as ``Run.culprit``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

#: Runs ``tests`` at ``commit`` and returns the ids of those that failed.
RunAt = Callable[[str, Sequence[str]], set[str]]


class BisectStep(BaseModel):
    """One round: the commit tried and the tests that failed there; ``environment`` (the
    environment name the commit ran in) and ``run`` (the stored round's run id) when the round
    ran through ``relay.pipeline.bisection``."""

    model_config = ConfigDict(frozen=True)

    commit: str
    failed: list[str] = Field(default_factory=list)
    environment: str | None = None
    run: str | None = None


class Culprit(BaseModel):
    """The first bad commit, the tests it breaks, and the rounds it took to find (≤ ⌈log2 n⌉
    for a range of n commits, +1 with ``verify_last``)."""

    model_config = ConfigDict(frozen=True)

    commit: str
    tests: list[str]
    rounds: int
    steps: list[BisectStep]


def bisect(commits: Sequence[str], tests: Sequence[str], run: RunAt, *,
           verify_last: bool = False) -> Culprit:
    """The first commit in ``commits`` at which any of ``tests`` fails.

    ``verify_last``: also run the tests at ``commits[-1]`` first (one extra round) instead of
    trusting the caller that head is bad.  Raises ``ValueError`` for an empty range or tests,
    or when ``verify_last`` finds head good.
    """
    if not commits or not tests:
        raise ValueError("bisect needs at least one commit and one failing test")
    steps: list[BisectStep] = []
    bad_failed: list[str] = list(tests)
    if verify_last:
        failed = sorted(run(commits[-1], list(tests)))
        steps.append(BisectStep(commit=commits[-1], failed=failed))
        if not failed:
            raise ValueError(f"head {commits[-1]} passes {len(tests)} tests: nothing to bisect")
        bad_failed = failed
    lo, hi = 0, len(commits) - 1  # invariant: commits[hi] is bad; everything before lo is good
    while lo < hi:
        mid = (lo + hi) // 2
        failed = sorted(run(commits[mid], bad_failed))
        steps.append(BisectStep(commit=commits[mid], failed=failed))
        if failed:
            hi, bad_failed = mid, failed
        else:
            lo = mid + 1
    return Culprit(commit=commits[hi], tests=bad_failed, rounds=len(steps), steps=steps)
