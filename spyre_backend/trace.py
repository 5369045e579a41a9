"""Device trace: every aten overload that reaches the simulated device, per test (issue 28).

Opt-in: ``SPYRE_SIM_TRACE=<directory>`` (read once at import).  The fallback
(``spyre_backend.fallback``) calls ``record`` with the overload's full name (``aten::mm``,
``aten::add.Tensor``) before anything else — before the support table, capabilities and faults —
so an op the device rejects is recorded too: it reached the device.  Ops that never reach the
PrivateUse1 key (CPU-only work of a test, composite ops decomposed above it) are not recorded:
this is what the device saw, the ground truth selection's index is measured against.

The test is pytest's current one (``spyre_backend.faults.current_test``: ``<spec file
name>::<rest of the node id>``), ``"<no test>"`` outside one.  Each process appends one JSON
line per test, ``{"test": key, "ops": [sorted overloads]}``, to ``<dir>/trace-<pid>.jsonl`` when
its next test starts recording and at exit; a test traced in several pieces (reruns, phases)
has several lines, whose union is its trace (``read_trace``).  Off, ``record`` is never called:
the hook costs one module-global test.
"""

from __future__ import annotations

import atexit
import json
import os
from collections.abc import Iterable
from pathlib import Path

from .faults import current_test

__all__ = ["ACTIVE", "NO_TEST", "flush", "read_trace", "record"]

NO_TEST = "<no test>"
_DIR = os.environ.get("SPYRE_SIM_TRACE") or None
ACTIVE = _DIR is not None

_test: str | None = None
_ops: set[str] = set()


def record(overload: str) -> None:
    """Note that ``overload`` reached the device in the current test."""
    global _test
    test = current_test() or NO_TEST
    if test != _test:
        flush()
        _test = test
    _ops.add(overload)


def flush() -> None:
    """Append the current test's ops (if any) to this process's trace file; ``OSError`` from the
    filesystem propagates (a trace that cannot be written must not pass for an empty one)."""
    if _DIR is None or _test is None or not _ops:
        return
    path = Path(_DIR) / f"trace-{os.getpid()}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"test": _test, "ops": sorted(_ops)}) + "\n")
    _ops.clear()


def read_trace(files: Iterable[Path]) -> dict[str, set[str]]:
    """Test key → every overload traced for it, over ``files`` (``trace-*.jsonl``); a line that
    is not JSON (a process killed mid-write) is skipped."""
    out: dict[str, set[str]] = {}
    for path in files:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            out.setdefault(rec["test"], set()).update(rec["ops"])
    return out


if ACTIVE:
    atexit.register(flush)
