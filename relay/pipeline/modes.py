"""The mode every execution of a run gives each test: stage 3's, not the spec's.

``relay select`` prints each test's stage-3 mode (``selection.stages.classify``); a run executes its
tests — head, baseline, stage 4's reruns, bisection rounds, on this machine or as Celery shards —
with ``run_modes(selection)`` handed to the executors (``ports.ExecutorFactory(modes=...)``), so
a test ``select`` predicts ``xfail`` (e.g. ``aten::_index_put_impl_`` has no Spyre kernel) is
run as ``xfail`` by every path.  The rule's reason is the classification's own reason for the
mode (the support-table entry or the spec rule).
"""

from __future__ import annotations

from collections.abc import Iterable

from selection.models import SelectedTest
from test_specs.values.planned import ModeRule

__all__ = ["run_modes"]

#: Prefixes of the stage-3 reasons that decide a mode (``selection.stages.classify``), most specific first.
_MODE_REASONS = ("unsupported op:", "unsupported dtype:", "spec rule:")


def _reason(test: SelectedTest) -> str | None:
    if test.mode == "mandatory_success":
        return None
    for prefix in _MODE_REASONS:
        found = next((r for r in test.reasons if r.startswith(prefix)), None)
        if found is not None:
            return f"selection: {found}"
    return f"selection: classified {test.mode}"


def run_modes(selected: Iterable[SelectedTest]) -> dict[str, ModeRule]:
    """``{test id: ModeRule}`` for every selected test that runs (``skip`` tests do not)."""
    return {t.id: ModeRule(mode=t.mode, reason=_reason(t)) for t in selected if t.mode != "skip"}
