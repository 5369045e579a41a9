"""An OpInfo's own skips and expected failures, as they apply to one spec item.

Upstream PyTorch attaches per-test directives to each OpInfo (``OpInfo.decorators``, which
``OpInfo.skips`` is folded into): ``DecorateInfo(decorators, cls_name, test_name, device_type=...,
dtypes=..., active_if=...)``.  When ``@ops`` instantiates ``<cls_name>.<test_name>`` for a device
type and dtype, ``OpInfo.get_decorators`` applies the decorators of every ``DecorateInfo`` whose
``is_active(cls_name, test_name, device_type, dtype, param_kwargs)`` holds (plus the bare,
non-``DecorateInfo`` decorators, which apply to every test of the op)
(``torch/testing/_internal/opinfo/core.py``, ``common_device_type.ops``).

``upstream_mark(op, upstream, dtype)`` answers "would upstream skip or expect this test to fail
on our device?" for the test a template mirrors (``Template.upstream``, e.g.
``test/test_ops.py::TestCommon::test_out``).  Recognised decorators:

- ``unittest.skip(msg)``, ``unittest.skipIf(True, msg)``, ``unittest.skipUnless(False, msg)``,
  bare ``unittest.skip`` → ``skip``; ``unittest.expectedFailure`` → ``xfail``;
- ``common_device_type.skipIf(dep, reason, device_type)`` (and subclasses) with a ``bool`` ``dep``
  that is true and a device type that includes ours → ``skip``; a ``str`` ``dep`` names a test
  instance attribute and cannot be decided here, so it is ignored;
- ``common_device_type.expectedFailure(device_type, dtype)`` matching our device and dtype →
  ``xfail``;
- ``onlyCPU``/``onlyCUDA``/``onlyMPS``/``onlyXPU``/``onlyHPU`` → ``skip`` ("Only runs on <dev>").

Everything else (``toleranceOverride``, ``precisionOverride``, ``skipCPUIfNoLapack``, ...) does
not change the mode.  Skips win over expected failures (upstream's skip raises before the test
body runs).

Device matching: our device matches a ``device_type`` of ``None``, ``"privateuse1"`` or
``"spyre"``.  Upstream's ``PrivateUse1TestBase.device_type`` is ``"privateuse1"`` at class
definition, so a directive written for ``"privateuse1"`` targets every PrivateUse1 backend; our
source-tree runs set it to ``"spyre"`` before instantiation (``spyre_backend.testing``; design
§7), so a directive written for ``"spyre"`` applies there too.  ``"cpu"`` directives do not
match: the device under test is the accelerator even though samples are built on the CPU.
"""

from __future__ import annotations

import functools
import unittest
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict

#: ``device_type`` values of a ``DecorateInfo`` that denote the device under test (see above).
DEVICE_TYPES: tuple[str, ...] = ("privateuse1", "spyre")


class UpstreamMark(BaseModel):
    """What upstream does with one (OpInfo, test, dtype): ``skip`` or ``xfail``, and why.

    ``reason`` names the OpInfo, the upstream test and the decorator's own message, e.g.
    ``"OpInfo 'empty' skips TestCommon.test_out upstream: Expected: empty is not comparable"``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["skip", "xfail"]
    reason: str


def split_upstream(upstream: str) -> tuple[str, str] | None:
    """``"test/test_ops.py::TestCommon::test_out"`` → ``("TestCommon", "test_out")``; ``None``
    when the id has no ``Class::method`` tail (a module-level upstream test)."""
    parts = upstream.split("::")
    return (parts[-2], parts[-1]) if len(parts) >= 3 else None


def _probe() -> Any:
    """A fresh test function for a unittest decorator to mark (``expectedFailure`` sets an
    attribute on the function it is given, so one shared probe would keep the mark)."""

    def probe() -> None:
        pass

    return probe


@functools.cache
def _only_devices() -> dict[Any, str]:
    from torch.testing._internal import common_device_type as cdt

    return {cdt.onlyCPU: "cpu", cdt.onlyCUDA: "cuda", cdt.onlyMPS: "mps", cdt.onlyXPU: "xpu",
            cdt.onlyHPU: "hpu"}


def _ours(device_type: Any) -> bool:
    if device_type is None:
        return True
    if isinstance(device_type, str):
        return device_type in DEVICE_TYPES
    return any(d in DEVICE_TYPES for d in device_type)


def classify(dec: Any, dtype: torch.dtype) -> tuple[Literal["skip", "xfail"], str] | None:
    """``(mode, message)`` for one decorator applied to a test on our device at ``dtype``, or
    ``None`` when it does not skip or expect a failure there (see the module docstring)."""
    from torch.testing._internal import common_device_type as cdt

    if getattr(dec, "__module__", None) == "unittest.case" and callable(dec):
        if dec is unittest.skip:  # DecorateInfo(unittest.skip, ...): skip(fn) skips with reason ""
            return "skip", ""
        try:
            wrapped = dec(_probe())
        except Exception:  # noqa: BLE001 - not a test decorator after all
            return None
        if getattr(wrapped, "__unittest_skip__", False):
            return "skip", str(getattr(wrapped, "__unittest_skip_why__", ""))
        if getattr(wrapped, "__unittest_expecting_failure__", False):
            return "xfail", "unittest.expectedFailure"
        return None
    if isinstance(dec, cdt.skipIf):
        return ("skip", str(dec.reason)) if isinstance(dec.dep, bool) and dec.dep and _ours(dec.device_type) else None
    if isinstance(dec, cdt.expectedFailure):
        hit = _ours(dec.device_type) and (dec.dtype is None or dec.dtype == dtype)
        return ("xfail", f"expectedFailure({dec.device_type!r})") if hit else None
    if isinstance(dec, cdt.onlyOn):
        return None if _ours(dec.device_type) else ("skip", f"Only runs on {dec.device_type}")
    try:
        only = _only_devices().get(dec)
    except TypeError:  # an unhashable decorator object
        only = None
    return ("skip", f"Only runs on {only}") if only else None


def _active(info: Any, cls_name: str, test_name: str, dtype: torch.dtype, param_kwargs: dict[str, Any]) -> bool:
    """Upstream's ``DecorateInfo.is_active`` for any of our device type names; a callable
    ``active_if`` that raises counts as inactive."""
    if info.cls_name not in (None, cls_name) or info.test_name not in (None, test_name):
        return False  # cheap pre-filter: most DecorateInfos name another test
    try:
        return any(info.is_active(cls_name, test_name, d, dtype, param_kwargs) for d in DEVICE_TYPES)
    except Exception:  # noqa: BLE001 - a broken active_if predicate
        return False


def upstream_mark(op: Any, upstream: str, dtype: str) -> UpstreamMark | None:
    """Whether upstream skips (or expects to fail) ``upstream`` for OpInfo ``op`` at ``dtype``
    (a name like ``"float32"``) on our device; ``None`` when it runs it normally.

    ``op`` is an OpInfo (anything with ``name``, ``variant_test_name`` and ``decorators``);
    ``upstream`` a test id ending in ``Class::method``.  The first matching skip wins, else the
    first expected failure.  Raises nothing for odd decorators (they are ignored).
    """
    from torch.testing._internal.opinfo.core import DecorateInfo

    target = split_upstream(upstream)
    if target is None:
        return None
    cls_name, test_name = target
    tdtype = getattr(torch, dtype)
    param_kwargs = {"op": op, "dtype": tdtype}
    subject = f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name
    found: dict[str, str] = {}
    for info in getattr(op, "decorators", ()) or ():
        if isinstance(info, DecorateInfo):
            decs = info.decorators if _active(info, cls_name, test_name, tdtype, param_kwargs) else []
        else:
            decs = [info]  # a bare decorator applies to every test of the op (get_decorators)
        for dec in decs:
            hit = classify(dec, tdtype)
            if hit is not None:
                found.setdefault(hit[0], hit[1])
    where = f"{cls_name}.{test_name}"
    if "skip" in found:
        why = found["skip"] or "no message"
        return UpstreamMark(mode="skip", reason=f"OpInfo {subject!r} skips {where} upstream: {why}")
    if "xfail" in found:
        return UpstreamMark(mode="xfail",
                            reason=f"OpInfo {subject!r} expects {where} to fail upstream ({found['xfail']})")
    return None
