"""Readiness of the declared items: does each spec item do what its spec declares?

torch-spyre's configs declare per test how the device behaves (``mandatory_success``, ``xfail``,
``xfail_strict``, ``skip``); a backend is ready for what it declares when every item behaves so.
An ``xfail`` or ``skip`` item is therefore *not* "not ready": it is ready as declared.  Per item,
by the mode it ran in and its outcome:

==================== ====================================== ====================================
mode                 as declared                            not as declared
==================== ====================================== ====================================
mandatory_success    passed, flaky                          failed, crashed, timed_out, skipped
xfail                xfailed; xpassed (better than          failed, crashed, timed_out
                     declared: listed as ``stale``)
xfail_strict         xfailed                                failed (pytest's strict XPASS),
                                                            crashed, timed_out
skip                 skipped                                anything else
==================== ====================================== ====================================

A ``skipped`` ``mandatory_success`` item (upstream's own ``skipTest``) is not ready: the spec
says it must pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from test_specs.values.results import TestResult

__all__ = ["AS_DECLARED", "as_declared", "declared_readiness"]

#: outcomes that are as declared, per mode
AS_DECLARED: dict[str, frozenset[str]] = {
    "mandatory_success": frozenset({"passed", "flaky"}),
    "xfail": frozenset({"xfailed", "xpassed"}),
    "xfail_strict": frozenset({"xfailed"}),
    "skip": frozenset({"skipped"}),
}
#: ids listed per kind before the list is cut
LISTED = 50


def as_declared(result: TestResult) -> bool:
    """Whether ``result`` behaved as its mode declares (see the module docstring)."""
    return result.outcome in AS_DECLARED.get(result.mode, AS_DECLARED["mandatory_success"])


def declared_readiness(results: Iterable[TestResult], *, run_id: str | None = None) -> dict[str, Any]:
    """``{"run", "items", "as_declared", "share", "not_as_declared", "stale"}`` for one run's
    results: ``share`` = as_declared / items (``None`` for no items); ``not_as_declared``: the
    first ``LISTED`` ids that are not, ``stale``: the first ``LISTED`` ``xfail`` items that passed
    (the spec can be tightened)."""
    items = ok = 0
    bad: list[str] = []
    stale: list[str] = []
    for r in results:
        items += 1
        if as_declared(r):
            ok += 1
            if r.outcome == "xpassed" and len(stale) < LISTED:
                stale.append(r.id)
        elif len(bad) < LISTED:
            bad.append(r.id)
    return {"run": run_id, "items": items, "as_declared": ok, "share": ok / items if items else None,
            "not_as_declared": bad, "stale": stale}
