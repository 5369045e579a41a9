"""Agreement of a run on the simulated device with what a torch-spyre config declares of real Spyre.

A torch-spyre config states, per upstream test, how real Spyre behaves: ``mandatory_success``
(it passes) or ``xfail``/``xfail_strict`` (it fails).  ``agreement(results)`` scores a run of
the config on the simulated device, per test (per instantiated variant):

- declared pass and it passed (``passed``, ``flaky``) → agrees; declared pass but
  ``failed``/``crashed``/``timed_out`` → disagrees ("sim fails where Spyre passes");
- declared fail (the result's ``mode`` is ``xfail``/``xfail_strict``, including a
  ``force_xfail``) and it failed (``xfailed``, ``crashed``, ``timed_out``) → agrees; it passed
  (``xpassed``; ``failed`` is how pytest reports a strict xfail that passed) → disagrees ("sim
  passes where Spyre fails": the sim is more permissive than Spyre);
- ``skipped`` at run time (upstream's own ``skipTest``, a missing SciPy) counts in neither;
- a declared fail whose declared reason is a compile-environment failure (``compile_environment``:
  Inductor's ``InductorError``, ``dxp_standalone not detected``) is set apart, counted as
  ``compile_env`` and not scored: the config says the test fails because torch-spyre's compiler
  toolchain is missing or fails on that machine, which an eager device cannot honour or refute.

``clusters(disagreements)`` groups the disagreements by direction and signature: the first line
of the failure message with numbers, hex addresses and tensor values blanked (so 40 variants of
one missing kernel are one cluster), or, for tests passing where Spyre fails, the declared
reason (the config's comment) — the place to look for a behaviour the sim lacks.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from test_specs.values.results import TestResult

#: a declared reason that blames the compile environment, not the device (module docstring)
COMPILE_ENV = re.compile(r"inductor|dxp_standalone", re.IGNORECASE)
PASS = frozenset({"passed", "flaky", "xpassed"})
FAIL = frozenset({"failed", "crashed", "timed_out", "xfailed"})
SIM_FAILS = "sim fails where Spyre passes"
SIM_PASSES = "sim passes where Spyre fails"


@dataclass
class Agreement:
    """Counts of one run; ``rate`` = agreeing / scored (1.0 when nothing was scored)."""

    agree: int = 0
    disagree: list[tuple[str, TestResult]] = field(default_factory=list)
    unscored: Counter[str] = field(default_factory=Counter)
    by_mode: Counter[tuple[str, bool]] = field(default_factory=Counter)
    compile_env: int = 0

    @property
    def scored(self) -> int:
        return self.agree + len(self.disagree)

    @property
    def rate(self) -> float:
        return self.agree / self.scored if self.scored else 1.0


def _declared_fail(r: TestResult) -> bool:
    return r.mode in ("xfail", "xfail_strict")


def _sim_passed(r: TestResult) -> bool | None:
    """Whether the test body passed on the sim; ``None`` when it did not run to a verdict."""
    if r.outcome == "skipped":
        return None
    if r.mode == "xfail_strict" and r.outcome == "failed":
        return True  # a strict xfail that passed is reported failed
    if r.outcome in PASS:
        return True
    return False if r.outcome in FAIL else None


def compile_environment(mode: str, reason: str | None) -> bool:
    """Whether a declared fail (``mode`` xfail/xfail_strict) blames the compile environment
    (``COMPILE_ENV`` in its declared reason)."""
    return mode in ("xfail", "xfail_strict") and bool(COMPILE_ENV.search(reason or ""))


def agreement(results: Iterable[TestResult], compile_env: frozenset[str] | set[str] = frozenset()) -> Agreement:
    """See the module docstring; ``compile_env``: ids of the declared fails whose reason blames
    the compile environment (``compile_environment``), set apart."""
    a = Agreement()
    for r in results:
        if r.id in compile_env and _declared_fail(r):
            a.compile_env += 1
            continue
        passed = _sim_passed(r)
        if passed is None:
            a.unscored[r.outcome] += 1
            continue
        declared_pass = not _declared_fail(r)
        a.by_mode[("pass" if declared_pass else "fail", passed)] += 1
        if passed == declared_pass:
            a.agree += 1
        else:
            a.disagree.append((SIM_FAILS if declared_pass else SIM_PASSES, r))
    return a


_BLANKS = [(re.compile(r"0x[0-9a-fA-F]+"), "0x…"), (re.compile(r"tensor\(.*"), "tensor(…)"),
           (re.compile(r"(?<![\w.])[-+]?\d+(\.\d+)?(e[-+]?\d+)?(?![\w.])"), "N"), (re.compile(r"\s+"), " ")]


def signature(r: TestResult, direction: str) -> str:
    """The cluster key of one disagreement (module docstring)."""
    if direction == SIM_PASSES:
        return r.upstream.rsplit("::", 1)[-1] if not r.op else f"op {r.op}"
    text = (r.message or r.outcome).strip().splitlines()[0] if (r.message or "").strip() else r.outcome
    for pat, rep in _BLANKS:
        text = pat.sub(rep, text)
    return text[:200]


def clusters(disagreements: list[tuple[str, TestResult]]) -> list[tuple[str, str, list[TestResult]]]:
    """``(direction, signature, results)`` sorted by size, largest first."""
    groups: dict[tuple[str, str], list[TestResult]] = defaultdict(list)
    for direction, r in disagreements:
        groups[(direction, signature(r, direction))].append(r)
    return sorted(((d, s, rs) for (d, s), rs in groups.items()), key=lambda x: (-len(x[2]), x[0], x[1]))
