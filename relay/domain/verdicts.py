"""Regression verdicts: did this change break the backend?  One verdict per test, against a baseline.

Classes follow Dr. CI's for PyTorch itself (NEW / FLAKY / BROKEN_TRUNK / UNSTABLE), plus the
outcomes a downstream backend needs to tell apart:

========== ==================================================================================
NEW        fails on head, passed (or did not exist) on base, and is not flaky
FLAKY      failed then passed on a rerun, or its outcome flips in recent history, or it is
           quarantined (``relay.quarantine.policy``: a ``DISABLED <test id>`` issue is open)
BROKEN_TRUNK fails on base too: not this change's fault
KNOWN      expected to fail by the spec (xfail, skip); an unexpected pass is reported as a spec
           that can be tightened
FIXED      failed on base, passes on head
INFRA      the runner crashed or timed out, or the environment failed: no verdict on the code
OK         passes on head (and on base, or there is no base)
========== ==================================================================================

The run's conclusion is ``failure`` if and only if some test is NEW, so a quarantined test never
fails a run (PyTorch CI skips tests with an open DISABLED issue; we run them and ignore failures).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from relay.domain.outcomes import BAD_OUTCOMES, INFRA_OUTCOMES, PASSING_OUTCOMES
from test_specs.results import TestResult

VerdictKind = Literal["NEW", "FLAKY", "BROKEN_TRUNK", "KNOWN", "FIXED", "INFRA", "OK"]
VERDICTS: tuple[str, ...] = ("NEW", "FLAKY", "BROKEN_TRUNK", "KNOWN", "FIXED", "INFRA", "OK")


class Verdict(BaseModel):
    """One test's verdict with the head and base outcomes it was drawn from and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    verdict: VerdictKind
    head: str
    base: str | None = None
    reason: str


def flips(history: Sequence[str]) -> int:
    """How often consecutive outcomes change between passing and failing in ``history``."""
    states = [o in BAD_OUTCOMES for o in history if o in BAD_OUTCOMES or o in PASSING_OUTCOMES]
    return sum(1 for a, b in zip(states, states[1:]) if a != b)


def classify(head: TestResult, base: TestResult | None, history: Sequence[str] = (),
             *, flip_threshold: int = 2, quarantined: str | None = None) -> Verdict:
    """The verdict of one test from its head result, base result and recent outcome history.

    ``history``: earlier outcomes of the same test on the upstream main branch, oldest first;
    ``flip_threshold`` pass↔fail flips or more make a failure FLAKY; ``quarantined``: the
    test's disable issue (e.g. ``DISABLED <id> (<url>)``) when it is quarantined — a failure is
    then FLAKY naming the issue, never NEW.
    """
    b = base.outcome if base is not None else None

    def v(kind: str, reason: str) -> Verdict:
        return Verdict(id=head.id, verdict=kind, head=head.outcome, base=b, reason=reason)

    h = head.outcome
    if h in INFRA_OUTCOMES:
        first = head.message.splitlines()[0][:200] if head.message else "no message"
        return v("INFRA", f"runner {h.replace('_', ' ')}: {first}")
    if h == "flaky":
        return v("FLAKY", "failed, then passed on a rerun")
    if h == "xpassed":
        return v("KNOWN", "unexpected pass of an xfail test: the spec can be tightened")
    if h in ("xfailed", "skipped"):
        return v("KNOWN", f"{h} as the spec expects")
    if h == "failed":
        if quarantined:
            return v("FLAKY", f"quarantined: {quarantined}; failure ignored")
        if b in BAD_OUTCOMES:
            return v("BROKEN_TRUNK", f"fails on base too ({b})")
        if flips(history) >= flip_threshold:
            return v("FLAKY", f"outcome flipped {flips(history)}× in recent history")
        if b is None:
            return v("NEW", "fails on head; not run on base (new test)")
        return v("NEW", f"fails on head, {b} on base")
    if b in BAD_OUTCOMES:
        return v("FIXED", f"{b} on base, passes on head")
    return v("OK", "passes")


def classify_all(head: Sequence[TestResult], base: Sequence[TestResult] | None,
                 history: Mapping[str, Sequence[str]] | None = None,
                 quarantined: Mapping[str, str] | None = None) -> list[Verdict]:
    """Verdicts for every head result (same order); ``base`` None means no baseline;
    ``quarantined``: ``{test id: its disable issue}`` (``relay.store.quarantine.
    quarantined_tests``)."""
    by_id = {r.id: r for r in base or ()}
    history = history or {}
    quarantined = quarantined or {}
    return [classify(r, by_id.get(r.id), history.get(r.id, ()), quarantined=quarantined.get(r.id))
            for r in head]


def conclusion(verdicts: Sequence[Verdict]) -> str:
    """``failure`` iff any verdict is NEW; ``neutral`` when nothing ran; else ``success``."""
    if not verdicts:
        return "neutral"
    return "failure" if any(v.verdict == "NEW" for v in verdicts) else "success"


def count(verdicts: Sequence[Verdict]) -> dict[str, int]:
    """Verdicts per class, every class present."""
    out = {k: 0 for k in VERDICTS}
    for v in verdicts:
        out[v.verdict] += 1
    return out
