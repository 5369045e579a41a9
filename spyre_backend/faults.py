"""Fault injection for the simulated device, configured by ``SPYRE_SIM_FAULTS``.

The variable is parsed once, at import. Syntax: comma-separated ``<aten op>:<kind>`` entries,
e.g. ``SPYRE_SIM_FAULTS="aten::_softmax:offset=0.01,aten::addcmul:nan,aten::mm:raise"``.
The op is an aten overload packet (``aten::_softmax``, not ``softmax``; it matches every
overload, e.g. ``add.Tensor`` and ``add.out``) or one overload (``aten::add.out``), as it
reaches the device: structured functional ops usually arrive as their ``.out`` overload.
Unknown ops are rejected. Kinds:

=============  ==============================================================
``offset=X``   add float ``X`` to every floating output of the op
``nan``        write NaN into every floating output (element 0 of each)
``raise``      raise ``RuntimeError`` instead of running the op
``abort``      ``os.abort()`` the process (simulates a device crash)
``hang``       sleep forever (simulates a hung device; use a test timeout)
``flaky=P``    raise ``RuntimeError`` in a test attempt with probability ``P`` in [0, 1]
=============  ==============================================================

``flaky=P`` means "a test attempt fails with probability P", not "every call fails with
probability P": a test that calls the op 20 times would otherwise fail with probability
1 - (1 - P)^20 (0.99 for P = 0.2), and pytest's reruns could never turn it FLAKY.  Inside a
pytest test (``PYTEST_CURRENT_TEST`` set) the first call of the op in a test attempt draws once,
and every later call in that attempt repeats the draw (runs, or raises).  The spec runner's
pytest plugin announces each attempt — the first run and every pytest-rerunfailures rerun — with
``begin_attempt``, which makes attempt boundaries exact.  Without it (another runner) they are
inferred: after a failing call the next call of the op is taken to be the next attempt (so a test
that catches the error and calls again draws again, and an attempt that failed for another reason
is rerun without a new draw).  Each draw is a
pure function of (``SPYRE_SIM_FAULTS_SEED``, op, test id, attempt number), so a seed gives the
same outcomes whatever the test order, sharding or process restarts; the test id is pytest's
node id with the spec file reduced to its name.  Outside a test every call draws from a private
RNG seeded by ``SPYRE_SIM_FAULTS_SEED`` (default 0).
An invalid entry raises ``ValueError`` naming the entry. When the variable is unset or empty,
``FAULTS`` is empty and the device skips fault handling with one truthiness check per op.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass

import torch

__all__ = ["Fault", "parse_faults", "FAULTS", "SEED", "before_op", "after_op", "flaky_fails", "current_test",
           "begin_attempt", "test_key",
           "attempt_draw"]

_KINDS_WITH_VALUE = {"offset", "flaky"}
_KINDS = {"offset", "nan", "raise", "abort", "hang", "flaky"}


@dataclass(frozen=True)
class Fault:
    """One injected fault: ``kind`` in offset|nan|raise|abort|hang|flaky, ``value`` for offset/flaky."""

    op: str
    kind: str
    value: float | None = None


def parse_faults(spec: str) -> dict[str, Fault]:
    """Parse a ``SPYRE_SIM_FAULTS`` string into ``{aten op name: Fault}``.

    Raises:
        ValueError: an entry is malformed (the message quotes the entry).
    """
    faults: dict[str, Fault] = {}
    for raw in spec.split(","):
        entry = raw.strip()
        if not entry:
            continue
        op, sep, kind = entry.rpartition(":")
        if not sep or not op.startswith("aten::") or op == "aten::" or ":" in op[len("aten::"):]:
            raise ValueError(f"SPYRE_SIM_FAULTS: bad entry {entry!r} (want 'aten::<op>:<kind>')")
        packet, _, overload = op[len("aten::"):].partition(".")
        try:
            packet_op = getattr(torch.ops.aten, packet)
        except AttributeError:
            raise ValueError(f"SPYRE_SIM_FAULTS: bad entry {entry!r}: no aten op {packet!r}") from None
        if overload and overload not in packet_op.overloads():
            raise ValueError(f"SPYRE_SIM_FAULTS: bad entry {entry!r}: no overload {op!r}") from None
        name, eq, value_text = kind.partition("=")
        if name not in _KINDS:
            raise ValueError(f"SPYRE_SIM_FAULTS: bad entry {entry!r}: unknown kind {name!r}")
        value: float | None = None
        if name in _KINDS_WITH_VALUE:
            try:
                value = float(value_text)
            except ValueError:
                raise ValueError(f"SPYRE_SIM_FAULTS: bad entry {entry!r}: {name} needs a number") from None
            if name == "flaky" and not 0.0 <= value <= 1.0:
                raise ValueError(f"SPYRE_SIM_FAULTS: bad entry {entry!r}: probability outside [0, 1]")
        elif eq:
            raise ValueError(f"SPYRE_SIM_FAULTS: bad entry {entry!r}: {name} takes no value")
        faults[op] = Fault(op, name, value)
    return faults


FAULTS: dict[str, Fault] = parse_faults(os.environ.get("SPYRE_SIM_FAULTS", ""))


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"SPYRE_SIM_FAULTS_SEED must be an integer, got {text!r}") from None


SEED: int = _seed(os.environ.get("SPYRE_SIM_FAULTS_SEED", "0"))
_rng = random.Random(SEED)


@dataclass
class _Attempt:
    """The flaky draw of one op in the current test attempt."""

    number: int
    fails: bool


_test: str | None = None  # the test the states below belong to
_attempts: dict[str, _Attempt] = {}  # op -> its draw in the current attempt of ``_test``


def test_key(nodeid: str) -> str:
    """A pytest node id as ``<spec file name>::<rest>`` (independent of the run directory)."""
    path, sep, rest = nodeid.partition("::")
    return f"{path.rsplit('/', 1)[-1]}{sep}{rest}"


def current_test() -> str | None:
    """The running pytest test (``test_key`` of its node id), or None outside one.

    Read from ``PYTEST_CURRENT_TEST`` (``"<node id> (<phase>)"``, set by pytest for each phase).
    """
    value = os.environ.get("PYTEST_CURRENT_TEST")
    return test_key(value.rsplit(" (", 1)[0]) if value else None


_announced: dict[str, int] = {}  # test -> attempts announced by ``begin_attempt``


def begin_attempt(nodeid: str) -> None:
    """Start a new attempt of the test ``nodeid`` (its first run or a rerun).

    Called by the spec runner's pytest plugin (``test_specs.plugin``) at the setup of every
    attempt, so a ``flaky`` op draws exactly once per attempt.  Without it (another runner)
    attempt boundaries are inferred as the module docstring says.
    """
    global _test
    key = test_key(nodeid)
    _announced[key] = _announced.get(key, 0) + 1
    _test = key
    _attempts.clear()


def attempt_draw(seed: int, op: str, test: str, attempt: int) -> float:
    """A uniform number in [0, 1) determined by its arguments alone (SHA-512 seeded ``random``)."""
    return random.Random(f"{seed}\0{op}\0{test}\0{attempt}").random()


def flaky_fails(fault: Fault) -> bool:
    """Whether this call of a ``flaky`` fault's op fails (see the module docstring)."""
    p = fault.value or 0.0
    test = current_test()
    if test is None:
        return _rng.random() < p
    global _test
    state = _attempts.get(fault.op)
    if test in _announced and test == _test:  # attempts announced by the runner's plugin
        if state is None:
            state = _attempts[fault.op] = _Attempt(_announced[test],
                                                   attempt_draw(SEED, fault.op, test, _announced[test]) < p)
        return state.fails
    if test != _test:
        _test = test
        _attempts.clear()
        state = None
    if state is not None and not state.fails:
        return False  # this attempt drew "no fault" already
    number = 1 if state is None else state.number + 1
    fails = attempt_draw(SEED, fault.op, test, number) < p
    _attempts[fault.op] = _Attempt(number, fails)
    return fails


def before_op(fault: Fault) -> None:
    """Apply the pre-execution part of ``fault`` (raise, abort, hang, flaky)."""
    kind = fault.kind
    if kind == "raise":
        raise RuntimeError(f"spyre: injected fault: {fault.op} failed on the device")
    if kind == "flaky" and flaky_fails(fault):
        raise RuntimeError(f"spyre: injected flaky fault: {fault.op} failed on the device")
    if kind == "abort":
        os.abort()
    if kind == "hang":
        while True:
            time.sleep(3600)


def after_op(fault: Fault, outputs: list[torch.Tensor]) -> None:
    """Perturb the (CPU views of the) floating outputs in place for offset/nan faults."""
    if fault.kind not in ("offset", "nan"):
        return
    with torch.no_grad():
        for t in outputs:
            if not (t.is_floating_point() and t.numel()):
                continue
            if fault.kind == "offset":
                t.add_(fault.value)
            else:
                t[(0,) * t.dim()] = float("nan")
