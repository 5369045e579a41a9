"""Agreement of the bundled specs with the bundled device: does every item do what it declares?

An item *agrees* when its outcome is what its mode declares (``mandatory_success`` → passed or
flaky; ``xfail`` / ``xfail_strict`` → xfailed; ``skip`` → skipped).  A ``mandatory_success`` item
skipped at run time (upstream's own ``skipTest``) is *unscored*.  Every other result disagrees,
with a cause (``cause``), the first one that applies:

``capability <rule>``     the device refused it by a capability rule (``spyre_backend/
                          capabilities.yaml``: in-device copy, stick layout, a missing kernel),
                          which torch-spyre's configs declare of real Spyre
``unsupported <aten op>`` the op support table has no kernel for it (``support.yaml``)
``dtype <aten op>``       the op refused the dtype (``support.yaml`` dtype rule)
``numerics``              the device result differed beyond the tolerance
``other <type>``          any other failure (the exception type raised on the device)
``crashed``/``timed_out`` the runner lost the test
``stale xfail``           an ``xfail`` item passed (``xpassed``; ``failed`` for ``xfail_strict``):
                          the spec can be tightened

``relay run --spec test_specs/specs/`` ends with 0 failed, 0 crashed exactly when no cause but
``stale xfail`` is left; ``bench/spec_agreement.py`` prints the table.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from test_specs.values.results import TestResult

__all__ = ["Table", "cause", "table", "STALE"]

STALE = "stale xfail"
_CAPABILITY = re.compile(r"\[capability (\w+)")
_UNSUPPORTED = re.compile(r"SpyreUnsupportedOpError: spyre: (aten::[\w.]+)")
_DTYPE = re.compile(r"SpyreDtypeError: spyre: (aten::[\w.]+)")
_RAISED = re.compile(r"(\w+(?:Error|Exception))\b")


def cause(r: TestResult) -> str | None:
    """The disagreement cause of one result (module docstring), ``None`` when it agrees or is
    unscored."""
    declared_fail = r.mode in ("xfail", "xfail_strict")
    if r.outcome == "xpassed" or (r.mode == "xfail_strict" and r.outcome == "failed"):
        return STALE
    if r.outcome in ("crashed", "timed_out"):
        return r.outcome
    if r.mode == "skip":
        return None if r.outcome == "skipped" else f"skip item ran: {r.outcome}"
    if r.outcome in ("passed", "flaky", "skipped") and not declared_fail:
        return None
    if r.outcome == "xfailed" or (declared_fail and r.outcome == "skipped"):
        return None
    text = f"{r.message or ''}\n{r.detail or ''}"
    for pattern, label in ((_CAPABILITY, "capability"), (_UNSUPPORTED, "unsupported"), (_DTYPE, "dtype")):
        if m := pattern.search(text):
            return f"{label} {m.group(1)}"
    if "differ" in text or "Mismatched elements" in text or "Tensor-likes are not close" in text:
        return "numerics"
    m = _RAISED.search(r.message or "")
    return f"other {m.group(1) if m else r.outcome}"


@dataclass
class Table:
    """``items``, ``agree``, ``unscored``, ``disagree`` (cause → count), ``examples`` (cause →
    first ids, at most 3), ``stale`` (ids of stale xfails) of one run."""

    items: int = 0
    agree: int = 0
    unscored: int = 0
    disagree: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)

    @property
    def bad(self) -> int:
        """Disagreements that fail a run (every cause but ``stale xfail``)."""
        return sum(n for c, n in self.disagree.items() if c != STALE)

    def as_dict(self) -> dict[str, object]:
        return {"items": self.items, "agree": self.agree, "unscored": self.unscored,
                "disagree": dict(self.disagree.most_common()), "examples": self.examples,
                "stale_xfails": self.stale}


def table(results: Iterable[TestResult]) -> Table:
    """The agreement table of a run's results."""
    t = Table()
    for r in results:
        t.items += 1
        c = cause(r)
        if c is None:
            if r.outcome == "skipped" and r.mode == "mandatory_success":
                t.unscored += 1
            else:
                t.agree += 1
            continue
        t.disagree[c] += 1
        ex = t.examples.setdefault(c, [])
        if len(ex) < 3:
            ex.append(r.id)
        if c == STALE:
            t.stale.append(r.id)
    return t
