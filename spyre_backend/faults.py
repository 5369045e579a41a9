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
``flaky=P``    raise ``RuntimeError`` with probability ``P`` in [0, 1]
=============  ==============================================================

``flaky`` draws from a private RNG seeded by ``SPYRE_SIM_FAULTS_SEED`` (default 0).
An invalid entry raises ``ValueError`` naming the entry. When the variable is unset or empty,
``FAULTS`` is empty and the device skips fault handling with one truthiness check per op.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass

import torch

__all__ = ["Fault", "parse_faults", "FAULTS", "before_op", "after_op"]

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


_rng = random.Random(_seed(os.environ.get("SPYRE_SIM_FAULTS_SEED", "0")))


def before_op(fault: Fault) -> None:
    """Apply the pre-execution part of ``fault`` (raise, abort, hang, flaky)."""
    kind = fault.kind
    if kind == "raise":
        raise RuntimeError(f"spyre: injected fault: {fault.op} failed on the device")
    if kind == "flaky" and _rng.random() < (fault.value or 0.0):
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
