"""Budget: cut the ranked selection to what fits in N minutes of measured test time.

Durations (seconds per test id) are given by the caller — the relay reads the median
``duration_ms`` of each test's past results from its database (``relay.store.durations``);
selection knows no database — and, for a test never run, ``DEFAULT_SECONDS``.  Source of the
default: the 100 ``compare_cpu`` items stored in the dev database on 2026-11-29 took a median
0.08 s and at most 1.25 s each on spyre-sim; an unmeasured test is charged 1.0 s, deliberately
above the median (unmeasured tests are often new templates), so a budget over mostly unmeasured
tests errs towards running fewer, not overrunning.

The cut walks the ranked list (``Selection`` order: -score, id) and keeps the *prefix* whose
running total fits; the first test that does not fit ends it, so a cut never keeps a
lower-ranked test over a higher-ranked one and the result is the same on every machine for the
same durations.  Tests in ``skip`` mode cost nothing and are never cut (they stay listed with
their reason; they do not run).  The cut is recorded as a ``budget`` stage (in, out, ms) and
each cut test is named in the notes' count.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace

from selection.models import StageStats
from selection.stage import SelectionState

DEFAULT_SECONDS = 1.0


def seconds_of(test_id: str, durations: Mapping[str, float], default: float = DEFAULT_SECONDS) -> float:
    """The measured seconds of ``test_id``, else ``default``."""
    return durations.get(test_id, default)


def span(seconds: float) -> str:
    """A duration for a reason: ``0.1 s`` and above in seconds, shorter ones in ms (``12 ms``,
    ``0.4 ms``), so a fast test never reads ``0.0 s``."""
    if seconds >= 0.05:
        return f"{seconds:.1f} s"
    ms = seconds * 1000.0
    return f"{ms:.0f} ms" if ms >= 1 else f"{ms:.1g} ms"


def apply_budget(state: SelectionState, minutes: float | None, durations: Mapping[str, float],
                 *, default_seconds: float = DEFAULT_SECONDS) -> SelectionState:
    """``state`` with its candidates cut to ``minutes`` of test time (see the module docstring).

    ``minutes=None`` returns ``state`` unchanged.  Raises ``ValueError`` for a negative budget.
    """
    if minutes is None:
        return state
    if minutes < 0:
        raise ValueError(f"budget must be ≥ 0 minutes, got {minutes}")
    t0 = time.perf_counter()
    ranked = sorted(state.candidates, key=lambda c: (-c.score, c.item.id))
    limit = minutes * 60.0
    used = 0.0
    kept = []
    full = False
    for cand in ranked:
        if cand.mode == "skip":
            kept.append(cand)
            continue
        cost = seconds_of(cand.item.id, durations, default_seconds)
        if full or used + cost > limit:
            full = True
            continue
        used += cost
        kept.append(cand.with_reason(f"budget: within {minutes:g} min "
                                     f"({span(used)} cumulative, this test {span(cost)})"))
    cut = len(ranked) - len(kept)
    ms = (time.perf_counter() - t0) * 1000.0
    stats = StageStats(name="budget", **{"in": sum(1 for c in ranked if c.mode != "skip")},
                       out=sum(1 for c in kept if c.mode != "skip"), ms=round(ms, 3))
    note = f"budget {minutes:g} min: kept {len(kept)} ({used / 60:.1f} min), cut {cut} lower-ranked tests"
    return replace(state, candidates=tuple(kept), stats=state.stats + (stats,),
                   notes=state.notes + (note,))
