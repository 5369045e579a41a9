"""Device trace: every aten overload that reaches the simulated device, per test (issue 28).

Opt-in: ``SPYRE_SIM_TRACE=<directory>`` (read once at import), or in process ``collecting()``
(the op index's capture, ``selection.index.op_index``).  The fallback (``spyre_backend.fallback``)
runs each call inside ``reached(op)``, which records the overload's full name (``aten::mm.out``,
``aten::add.Tensor``) before anything else — before the support table, capabilities and faults —
so an op the device rejects is recorded too: it reached the device.  A call made while the
fallback is already running another (the simulator's own view and copy plumbing, e.g.
``aten::as_strided`` for a device view) is *nested*: recorded apart, since it is how this
simulator implements the outer op, not an op the test sent; a fault on it still fires.  Ops that
never reach the PrivateUse1 key (CPU-only work of a test, composite ops decomposed above it) are
not recorded: this is what the device saw, the ground truth selection's index is measured against.

The test is pytest's current one (``spyre_backend.faults.current_test``: ``<spec file
name>::<rest of the node id>``), ``"<no test>"`` outside one.  Each process appends one JSON
line per test, ``{"test": key, "ops": [sorted overloads]}``, to ``<dir>/trace-<pid>.jsonl`` when
its next test starts recording and at exit, with ``"nested": [...]`` for nested calls; a test
traced in several pieces (reruns, phases) has several lines, whose union is its trace
(``read_trace``).  Off, the fallback's hook costs one module-global test.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .faults import current_test

__all__ = ["ACTIVE", "NO_TEST", "collecting", "flush", "read_trace", "reached", "record"]

NO_TEST = "<no test>"
_DIR = os.environ.get("SPYRE_SIM_TRACE") or None
ACTIVE = _DIR is not None

_test: str | None = None
_ops: set[str] = set()
_nested: set[str] = set()
_depth = 0
_collectors: list[set[str]] = []


def full_name(op: Any) -> str:
    """``aten::mm.out`` for an ``OpOverload`` (``aten::mm`` for its default overload)."""
    name = op._schema.name
    return name if op._overloadname == "default" else f"{name}.{op._overloadname}"


@contextlib.contextmanager
def reached(op: Any) -> Iterator[None]:
    """The fallback runs ``op`` inside this: recorded, nested calls told apart."""
    global _depth
    record(full_name(op), nested=_depth > 0)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1


def record(overload: str, *, nested: bool = False) -> None:
    """Note that ``overload`` reached the device in the current test (``nested``: inside another
    fallback call); in-process collectors get the top-level ones."""
    global _test
    if _collectors and not nested:
        for ops in _collectors:
            ops.add(overload)
    if _DIR is None:
        return
    test = current_test() or NO_TEST
    if test != _test:
        flush()
        _test = test
    (_nested if nested else _ops).add(overload)


@contextlib.contextmanager
def collecting() -> Iterator[set[str]]:
    """Collect the top-level overloads reaching the device inside the block into the yielded set
    (whatever ``SPYRE_SIM_TRACE`` says); the trace is active meanwhile."""
    global ACTIVE
    ops: set[str] = set()
    _collectors.append(ops)
    ACTIVE = True
    try:
        yield ops
    finally:
        _collectors.remove(ops)
        ACTIVE = _DIR is not None or bool(_collectors)


def flush() -> None:
    """Append the current test's ops (if any) to this process's trace file; ``OSError`` from the
    filesystem propagates (a trace that cannot be written must not pass for an empty one)."""
    if _DIR is None or _test is None or not (_ops or _nested):
        return
    path = Path(_DIR) / f"trace-{os.getpid()}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"test": _test, "ops": sorted(_ops), "nested": sorted(_nested)}) + "\n")
    _ops.clear()
    _nested.clear()


def read_trace(files: Iterable[Path], *, nested: bool = False) -> dict[str, set[str]]:
    """Test key → every overload traced for it (``nested``: the nested calls too), over
    ``files`` (``trace-*.jsonl``); a line that is not JSON (a process killed mid-write) is skipped."""
    out: dict[str, set[str]] = {}
    for path in files:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            ops = out.setdefault(rec["test"], set())
            ops.update(rec["ops"])
            if nested:
                ops.update(rec.get("nested", ()))
    return out


if ACTIVE:
    atexit.register(flush)
