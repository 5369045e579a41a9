"""Regression verdicts: did this change break the backend?  One verdict per test, against a baseline.

Classes follow Dr. CI's for PyTorch itself (NEW / FLAKY / BROKEN_TRUNK / UNSTABLE), plus the
outcomes a downstream backend needs to tell apart:

============ ================================================================================
NEW          fails on every attempt on head, passed (or did not exist) on base, and no
             flakiness evidence says otherwise
FLAKY        only on evidence a reviewer can open (``relay.domain.flakiness``): failed then
             passed within this run's attempts; quarantined (a ``DISABLED <test id>`` record,
             ``relay.quarantine.policy``); or the same failure flipped on trunk runs of one
             commit and torch build.  The reason names the run ids (``Verdict.evidence``).
BROKEN_TRUNK fails on base too: not this change's fault
KNOWN        expected to fail by the spec (xfail, skip); an unexpected pass is reported as a spec
             that can be tightened
FIXED        failed on base, passes on head
INFRA        the runner crashed or timed out, or the environment failed: no verdict on the code
OK           passes on head (and on base, or there is no base)
============ ================================================================================

The run's conclusion is ``failure`` if and only if some test is NEW, so a quarantined test never
fails a run (PyTorch CI skips tests with an open DISABLED issue; we run them and ignore failures).
A FLAKY that is really NEW hides a regression on purpose, which is worse than a missed
selection: every rule below errs towards NEW.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from relay.domain.flakiness import FlakyBy, QuarantineNote, TrunkResult, first_line, same_failure, trunk_flips
from relay.domain.outcomes import BAD_OUTCOMES, INFRA_OUTCOMES
from test_specs.values.results import TestResult

__all__ = ["Verdict", "VerdictKind", "VERDICTS", "FLIP_THRESHOLD", "classify", "classify_all",
           "conclusion", "count"]

VerdictKind = Literal["NEW", "FLAKY", "BROKEN_TRUNK", "KNOWN", "FIXED", "INFRA", "OK"]
VERDICTS: tuple[str, ...] = ("NEW", "FLAKY", "BROKEN_TRUNK", "KNOWN", "FIXED", "INFRA", "OK")
#: flips of the same failure on trunk that make it FLAKY: HUD's green / red / green is two
FLIP_THRESHOLD = 2


class Verdict(BaseModel):
    """One test's verdict with the head and base outcomes it was drawn from and why.

    ``flaky_by``: for FLAKY, the rule that made it so (``relay.domain.flakiness.FlakyBy``);
    ``evidence``: the run ids that show it, oldest first, also named in ``reason`` (the run
    itself for a rerun, the quarantine's flaky runs, the trunk runs that flipped; for
    BROKEN_TRUNK and FIXED against a trunk baseline, the trunk run the base result came from)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    verdict: VerdictKind
    head: str
    base: str | None = None
    reason: str
    flaky_by: FlakyBy | None = None
    evidence: list[str] = Field(default_factory=list)


def _trunk_evidence(head: TestResult, trunk: Sequence[TrunkResult],
                    threshold: int) -> tuple[str, list[str]] | None:
    """(reason, run ids) when the head's failure flipped ``threshold``+ times on trunk runs of
    one commit and build (``relay.domain.flakiness``), else ``None``."""
    flips = [f for f in trunk_flips(trunk) if same_failure(head.message, f.failed.message)]
    if len(flips) < threshold:
        return None
    runs = list(dict.fromkeys(r.run_id for f in flips for r in (f.before, f.after)))
    chain = "; ".join(f"{f.before.run_id} {f.before.outcome} -> {f.after.run_id} {f.after.outcome}"
                      f" at {f.after.head[:12]}" for f in flips)
    return (f"same failure flipped {len(flips)}x on trunk runs of one commit and torch build "
            f"(no change in between): {chain}; failure: {first_line(head.message)[:160]!r}", runs)


def _quarantine_reason(note: QuarantineNote) -> str:
    runs = (f"flaky in main-branch runs {', '.join(note.runs)}" if note.runs
            else "its flaky runs are listed in the issue")
    return f"quarantined: {note.issue}; {runs}; failure ignored"


def classify(head: TestResult, base: TestResult | None, trunk: Sequence[TrunkResult] = (),
             *, flip_threshold: int = FLIP_THRESHOLD, quarantined: QuarantineNote | None = None,
             run_id: str | None = None, base_from: tuple[str, str] | None = None,
             unseen: str | None = None, same_way: bool = False) -> Verdict:
    """The verdict of one test from its head result, base result and flakiness evidence.

    ``trunk``: the test's outcomes in trunk runs, oldest first (``relay.store.regression.
    trunk_history``: main ref, same backend and environment, no injected regression);
    ``flip_threshold`` flips of the same failure on one commit and build make a failure FLAKY;
    ``quarantined``: the test's quarantine record — a failure is then FLAKY naming the issue and
    its runs, never NEW; ``run_id``: this run, named as the evidence of a rerun pass;
    ``base_from``: the trunk run the base result comes from, ``(run id, head commit)``, named in
    BROKEN_TRUNK (its evidence) and FIXED reasons; ``unseen``: the NEW reason for a failure without a base
    result (default: a new test); ``same_way``: BROKEN_TRUNK only when the base failed with the
    same failure (``same_failure``, Dr. CI's rule for a trunk baseline) — a different failure
    is NEW.
    """
    b = base.outcome if base is not None else None

    def v(kind: str, reason: str, by: FlakyBy | None = None, evidence: Sequence[str] = ()) -> Verdict:
        return Verdict(id=head.id, verdict=kind, head=head.outcome, base=b, reason=reason,
                       flaky_by=by, evidence=list(evidence))

    h = head.outcome
    where = f" in trunk run {base_from[0]} at {base_from[1][:12]}" if base_from else " on base"
    if h in INFRA_OUTCOMES:
        first = head.message.splitlines()[0][:200] if head.message else "no message"
        return v("INFRA", f"runner {h.replace('_', ' ')}: {first}")
    if h == "flaky":
        rerun_in = f"run {run_id}" if run_id else "this run"
        return v("FLAKY", f"failed, then passed on a rerun in {rerun_in} ({head.attempts} attempts)",
                 "rerun", [run_id] if run_id else [])
    if h == "xpassed":
        return v("KNOWN", "unexpected pass of an xfail test: the spec can be tightened")
    if h in ("xfailed", "skipped"):
        return v("KNOWN", f"{h} as the spec expects")
    if h == "failed":
        if quarantined is not None:
            return v("FLAKY", _quarantine_reason(quarantined), "quarantine", quarantined.runs)
        if b in BAD_OUTCOMES and (not same_way or same_failure(head.message, base.message if base else None)):
            return v("BROKEN_TRUNK", f"fails{where} too ({b})" + (" the same way" if same_way else ""),
                     evidence=[base_from[0]] if base_from else ())
        found = _trunk_evidence(head, trunk, flip_threshold)
        if found is not None:
            return v("FLAKY", found[0], "trunk_flips", found[1])
        if b is None:
            return v("NEW", unseen or "fails on head; not run on base (new test)")
        if b in BAD_OUTCOMES:
            return v("NEW", f"fails differently{where}: {first_line(head.message)[:120]!r} here, "
                            f"{first_line(base.message if base else None)[:120]!r} there")
        return v("NEW", f"fails on head, {b}{where}")
    if b in BAD_OUTCOMES:
        return v("FIXED", f"{b}{where}, passes on head", evidence=[base_from[0]] if base_from else ())
    return v("OK", "passes")


def classify_all(head: Sequence[TestResult], base: Sequence[TestResult] | None,
                 trunk: Mapping[str, Sequence[TrunkResult]] | None = None,
                 quarantined: Mapping[str, QuarantineNote] | None = None, *,
                 run_id: str | None = None, base_from: Mapping[str, tuple[str, str]] | None = None,
                 unseen: str | None = None, same_way: bool = False) -> list[Verdict]:
    """Verdicts for every head result (same order); ``base`` None means no baseline; ``trunk``:
    ``{test id: trunk results}``; ``quarantined``: ``{test id: its quarantine record}``
    (``relay.store.quarantine.quarantined_tests``); ``base_from``: ``{test id: (run id, commit)
    of the trunk run its base result comes from}``; ``unseen``, ``same_way``: as in ``classify``."""
    by_id = {r.id: r for r in base or ()}
    trunk = trunk or {}
    quarantined = quarantined or {}
    base_from = base_from or {}
    return [classify(r, by_id.get(r.id), trunk.get(r.id, ()), quarantined=quarantined.get(r.id),
                     run_id=run_id, base_from=base_from.get(r.id), unseen=unseen, same_way=same_way)
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
