"""Spyre capability rules: what real Spyre rejects although the op table lets the op through.

The data lives in ``capabilities.yaml`` (packaged with this module). Each rule has an ``id``, a
``kind``, the aten names it applies to, the error it raises and its ``sources``: the
torch-spyre configs (``tests/configs/<group>/<file>``) whose declared reasons state the
behaviour, with the config group. Kinds, checked by ``check`` on every call that reaches the
fallback with a device tensor:

* ``in_device_copy`` — a copy whose source and destination are both Spyre tensors
  (``copy_``/``_copy_from`` between device tensors, ``clone`` of a device tensor, ``_to_copy``
  from a device tensor to the device) → ``SpyreCompileError`` (a ``RuntimeError``);
  host↔device copies are allowed.
* ``contiguous_inputs`` — a kernel (ops of the listed support categories, plus the listed ops)
  given a device tensor with more than one element that is not contiguous (transposed, strided,
  expanded) → ``SpyreCompileError``: Spyre lays tensors out in 128-byte sticks along the last
  dimension and its compiler cannot restickify.

The two layout kinds are not checked while autograd runs a backward pass nor inside a graph
compiled for Spyre (``compiled_graph()``): the configs' evidence is eager forward calls, and a
compiled graph (torch-spyre compiles backward graphs whole) has its layouts and copies planned
by the compiler — e.g. aot_autograd's ``.contiguous()`` of ``sum``'s expanded gradient.
* ``missing_kernel`` — the Spyre stack has no kernel for the op → ``SpyreUnsupportedOpError``
  (a ``NotImplementedError``), after torch's own argument error where torch-spyre's path runs
  the op's meta function first (``validation.torch_error_first``).

Messages name the aten overload, the dtype of the first device tensor, the rule id and its
first source, e.g. ``spyre: aten::copy_ (float16): Error: In-device copy not implemented
[capability in_device_copy; from torch-spyre tests/configs/upstream_tests/test_view_ops_config.yaml]``.

``SPYRE_SIM_CAPABILITY_GROUPS`` (comma list of config groups; default: all rules; ``none``: no
rule), read once at import, keeps only rules with a source in those groups — for held-out
fidelity measurements (``bench/spyre_fidelity.py --rules-from``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

import torch
import yaml

from . import validation
from .errors import SpyreCompileError, SpyreUnsupportedOpError

__all__ = ["Rule", "rules", "rules_for", "check", "active_groups", "compiled_graph"]

DEVICE_TYPE = "spyre"
KINDS = ("in_device_copy", "contiguous_inputs", "missing_kernel")


@dataclass(frozen=True)
class Rule:
    """One capability rule (see the module docstring); ``sources``: ``(group, config, says)``."""

    id: str
    kind: str
    ops: frozenset[str]
    categories: frozenset[str]
    error: str
    message: str
    sources: tuple[tuple[str, str, str], ...]

    @property
    def groups(self) -> frozenset[str]:
        return frozenset(g for g, _, _ in self.sources)

    def where(self) -> str:
        return f"capability {self.id}; from torch-spyre tests/configs/{self.sources[0][1]}"


def active_groups(env: str | None = None) -> frozenset[str] | None:
    """The groups named by ``SPYRE_SIM_CAPABILITY_GROUPS`` (``None`` = every rule, ``none`` =
    no rule); raises ``ValueError`` naming the known groups for any other name, or for ``none``
    beside a group (a typo must not silently measure "no rules")."""
    raw = os.environ.get("SPYRE_SIM_CAPABILITY_GROUPS", "") if env is None else env
    names = {g.strip() for g in raw.split(",") if g.strip()}
    if not names:
        return None
    if {n.lower() for n in names} == {"none"}:
        return frozenset()
    known = {g for r in _load() for g in r.groups}
    unknown = sorted(names - known)
    if unknown:
        raise ValueError(f"SPYRE_SIM_CAPABILITY_GROUPS={raw!r}: unknown config group(s) {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(known))}, or 'none' alone for no rule")
    return frozenset(names)


@functools.cache
def _load() -> tuple[Rule, ...]:
    text = resources.files(__package__).joinpath("capabilities.yaml").read_text(encoding="utf-8")
    out = []
    for r in yaml.safe_load(text)["rules"]:
        if r["kind"] not in KINDS:
            raise ValueError(f"capabilities.yaml: rule {r['id']}: unknown kind {r['kind']!r}")
        out.append(Rule(id=r["id"], kind=r["kind"], ops=frozenset(r.get("ops", ())),
                        categories=frozenset(r.get("categories", ())), error=r["error"], message=r["message"],
                        sources=tuple((s["group"], s["config"], s["says"]) for s in r["sources"])))
    return tuple(out)


def rules(groups: frozenset[str] | None = None) -> tuple[Rule, ...]:
    """The active rules: those with a source in ``groups`` (default: the environment's, read
    once; ``ValueError`` for an unknown group, see ``active_groups``)."""
    if groups is None:
        groups = _environment_groups()
        if groups is None:
            return _load()
    return tuple(r for r in _load() if r.groups & groups)


@functools.cache
def _environment_groups() -> frozenset[str] | None:
    return active_groups()


_STATE = threading.local()


def rules_for(full: str, category: str | None) -> tuple[Rule, ...]:
    """The active rules that apply to aten overload ``full`` (e.g. ``aten::add.Tensor``) whose
    support-table category is ``category``."""
    packet = full.split(".", 1)[0]
    return tuple(r for r in rules() if full in r.ops or packet in r.ops or (category in r.categories))


def _dev(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == DEVICE_TYPE


def _tensors(args: tuple, kwargs: dict):
    for x in (*args, *kwargs.values()):
        if isinstance(x, torch.Tensor):
            yield x
        elif isinstance(x, (list, tuple)):
            yield from (e for e in x if isinstance(e, torch.Tensor))


def _in_device_copy(full: str, args: tuple, kwargs: dict) -> bool:
    packet = full.split(".", 1)[0]
    if packet in ("aten::copy_", "aten::_copy_from"):
        return len(args) >= 2 and _dev(args[0]) and _dev(args[1])
    if packet == "aten::clone":
        return bool(args) and _dev(args[0])
    if packet == "aten::_to_copy":
        dev = kwargs.get("device")
        to_device = dev is None or torch.device(dev).type == DEVICE_TYPE
        return bool(args) and _dev(args[0]) and to_device
    return False


def _resolving_bit(args: tuple) -> bool:
    """A copy out of a neg/conj view: torch resolves the bit on the way to the host (``.cpu()``)."""
    return any(isinstance(a, torch.Tensor) and (a.is_neg() or a.is_conj()) for a in args[:2])


def _exempt() -> bool:
    """Layout rules do not apply inside a backward pass or a compiled graph (docstring)."""
    return torch._C._current_graph_task_id() != -1 or bool(getattr(_STATE, "compiled", 0))


def _violates(rule: Rule, full: str, args: tuple, kwargs: dict) -> bool:
    if rule.kind == "missing_kernel":
        return True
    if rule.kind == "in_device_copy":
        hit = _in_device_copy(full, args, kwargs) and not _resolving_bit(args)
    elif rule.kind == "contiguous_inputs":
        hit = any(_dev(t) and t.numel() > 1 and not t.is_contiguous() for t in _tensors(args, kwargs))
    else:
        hit = False
    return hit and not _exempt()  # the exemption is asked only of a call that breaks the rule


@contextlib.contextmanager
def compiled_graph() -> Iterator[None]:
    """Run a graph compiled for Spyre (``spyre_backend.compiler``): the layout rules are off."""
    _STATE.compiled = getattr(_STATE, "compiled", 0) + 1
    try:
        yield
    finally:
        _STATE.compiled -= 1


def check(op: torch._ops.OpOverload, full: str, applicable: tuple[Rule, ...], args: tuple, kwargs: dict) -> None:
    """Raise the error of the first of ``applicable`` (``rules_for``) the call of ``op`` breaks.

    Raises:
        SpyreCompileError: ``in_device_copy``, ``contiguous_inputs``.
        SpyreUnsupportedOpError: ``missing_kernel`` (torch's own argument error instead when the
            op is structured and its meta function rejects the call: ``validation.meta_error_first``).
    """
    for rule in applicable:
        if not _violates(rule, full, args, kwargs):
            continue
        dtype = next((str(t.dtype).removeprefix("torch.") for t in _tensors(args, kwargs) if _dev(t)), None)
        head = f"spyre: {full}" + (f" ({dtype})" if dtype else "")
        why = f"{rule.message} [{rule.where()}]"
        if rule.error == "unsupported":
            raise validation.meta_error_first(op, args, kwargs) or SpyreUnsupportedOpError(
                f"{head} is not supported on Spyre: {full} {why}", aten_op=full, reason=why)
        raise SpyreCompileError(f"{head}: {why}", aten_op=full, reason=why)
