"""The Spyre op support table: which aten ops run on the device, in which dtypes, and why not.

The data lives in ``support.yaml`` (packaged with this module); this module only loads and
answers questions about it. Names are aten names with the ``aten::`` prefix. An entry is either
an overload packet (``aten::add`` covers ``add.Tensor``, ``add.out``, ...) or one overload
(``aten::index.Tensor_out``); an overload entry wins over its packet entry.

Dtype rule (documented here because every caller relies on it):

* ``SUPPORTED_DTYPES`` = float16 (native), bfloat16, float32 (accepted, computed in fp16 unless
  ``SPYRE_SIM_PRECISION=exact``; see ``spyre_backend.numerics``), int64 and bool: the dtypes a
  test item may use on Spyre.  int64 and bool are there because torch-spyre's own configs list
  them in ``global.supported_dtypes`` (``test_binary_ufuncs.yaml``, ``test_view_ops_config.yaml``,
  the ``upstream_tests_beta`` configs); an item in them still runs only ops whose entry lists the
  dtype (next rules), so an int64 ``exp`` is refused by the op, not by the item's dtype.
* float64 and every complex dtype are rejected by every op.
* Integer and bool dtypes (group ``index``: bool, uint8, int8, int16, int32, int64) are accepted
  only by ops whose entry lists them: data movement (copies, views, cat, factories),
  comparisons, indexing ops (their indices, masks and conditions), and the basic integer
  arithmetic used for index math and autograd formulas (add, sub, mul, div, neg, abs, sum,
  cumsum, clamp, maximum, minimum). Every other compute op is float-only.
* Each op entry lists its dtypes by name or group (``float``, ``index``); the check applies to
  every device tensor the op receives and to the dtype of device tensors it creates.

Categories: ``data`` ops move, allocate, view or select bytes (amax, maximum, ...) and always run
in the input dtype; ``compute`` ops are subject to the fp32→fp16 policy; ``random`` ops draw from
the Spyre generator.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

import yaml

__all__ = [
    "SUPPORTED_DTYPES",
    "OpSupport",
    "lookup",
    "unsupported_reason",
    "decomposes_above_device",
    "all_ops",
    "normalize_name",
]


@dataclass(frozen=True)
class OpSupport:
    """One row of the support table.

    Attributes:
        name: aten name, ``aten::<packet>`` or ``aten::<packet>.<overload>``.
        dtypes: dtype names the op accepts on Spyre (empty when unsupported).
        adapter: name of the rewrite applied before running (``spyre_backend.adapters``), or None.
        reason: why the op cannot run (None when supported).
        supported: whether the op runs on Spyre at all.
        category: ``data`` | ``compute`` | ``random`` (``unsupported`` for denied ops).
    """

    name: str
    dtypes: tuple[str, ...]
    adapter: str | None = None
    reason: str | None = None
    supported: bool = True
    category: str = "compute"


def normalize_name(aten_op: str) -> str:
    """``add`` / ``aten.add.Tensor`` / ``aten::add.Tensor`` → ``aten::add`` / ``aten::add.Tensor``."""
    name = aten_op.strip()
    if name.startswith("aten."):
        name = "aten::" + name[len("aten."):]
    elif "::" not in name:
        name = "aten::" + name
    if name.endswith(".default"):
        name = name[: -len(".default")]
    return name


@functools.cache
def _table() -> tuple[tuple[str, ...], dict[str, OpSupport]]:
    text = resources.files(__package__).joinpath("support.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    groups: dict[str, list[str]] = data["dtype_groups"]

    def expand(names: list[str]) -> tuple[str, ...]:
        out: list[str] = []
        for n in names:
            for d in groups.get(n, [n]):
                if d not in out:
                    out.append(d)
        return tuple(out)

    table: dict[str, OpSupport] = {}
    for category, entries in data["supported"].items():
        for entry in entries:
            if isinstance(entry, str):
                entry = {"name": entry}
            name = normalize_name(entry["name"])
            if name in table:
                raise ValueError(f"support.yaml: duplicate entry {name}")
            table[name] = OpSupport(
                name=name,
                dtypes=expand(entry.get("dtypes", ["float"])),
                adapter=entry.get("adapter"),
                category=category,
            )
    for entry in data["unsupported"]:
        name = normalize_name(entry["name"])
        if name in table:
            raise ValueError(f"support.yaml: {name} is both supported and unsupported")
        table[name] = OpSupport(
            name=name, dtypes=(), reason=entry["reason"], supported=False, category="unsupported"
        )
    return tuple(data["supported_dtypes"]), table


SUPPORTED_DTYPES: tuple[str, ...] = _table()[0]


def lookup(aten_op: str) -> OpSupport | None:
    """The table row for ``aten_op`` (overload row first, then its packet), or None if absent."""
    table = _table()[1]
    name = normalize_name(aten_op)
    row = table.get(name)
    if row is None and "." in name.split("::", 1)[1]:
        row = table.get(name.rsplit(".", 1)[0])
    return row


def unsupported_reason(aten_op: str, dtype: str | None = None) -> str | None:
    """None when ``aten_op`` (in ``dtype``, if given, e.g. ``"float16"``) runs on Spyre.

    Otherwise a human reason, e.g. ``"aten::_index_put_impl_ has no Spyre kernel"`` or
    ``"aten::add does not support float64 on Spyre"``.
    """
    name = normalize_name(aten_op)
    row = lookup(name)
    if row is None:
        if decomposes_above_device(name):
            return None  # the device never sees it: its composite kernel's ops are asked instead
        return f"{name} is not in the Spyre op support table"
    if not row.supported:
        return f"{name} {row.reason}"
    if dtype is not None:
        dtype = dtype.removeprefix("torch.")
        if dtype not in row.dtypes:
            return f"{name} does not support {dtype} on Spyre (supported: {', '.join(row.dtypes)})"
    return None


@functools.cache
def decomposes_above_device(aten_op: str) -> bool:
    """True when ``aten_op`` (``aten::squeeze_``, or one overload ``aten::squeeze_.dim``) never
    reaches the Spyre fallback itself: each of its overloads has a ``CompositeExplicitAutograd``
    kernel and none a ``PrivateUse1`` kernel, so PyTorch's dispatcher runs the composite kernel
    for the device key and only the ops it calls reach the device (PyTorch dispatcher rule: an
    alias-key kernel beats a backend fallback).  A ``TorchDispatchMode`` above the device still
    sees such an op, so the op index lists it; the device cannot refuse it.  False for an op
    torch does not know."""
    import torch

    ns, _, rest = normalize_name(aten_op).partition("::")
    packet, _, overload = rest.partition(".")
    try:
        overloads = [overload] if overload else getattr(getattr(torch.ops, ns), packet).overloads()
    except AttributeError:
        return False
    names = [f"{ns}::{packet}" + ("" if o == "default" else f".{o}") for o in overloads]
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    try:
        return bool(names) and all(has(n, "CompositeExplicitAutograd") and not has(n, "PrivateUse1")
                                   for n in names)
    except RuntimeError:  # an overload name torch does not register
        return False


def all_ops() -> list[OpSupport]:
    """Every row of the table, sorted by name."""
    return sorted(_table()[1].values(), key=lambda r: r.name)
