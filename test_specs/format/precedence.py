"""The precedence rules of a spec (torch-spyre ``tests/oot_framework``, RFC 1287; design §6).

Shared by ``expand`` (spec items of ``source:`` entries) and ``upstream`` (source-tree tests of
``path:`` entries), so both apply one definition:

- ``effective_dtypes``: ``global.supported_dtypes`` ∩ the op's own dtypes ∩ the template's
  allowed dtypes ∩ the op's ``global.supported_ops[].dtypes`` (if listed), then ∪
  ``edits.dtypes.include`` (limited to the op's dtypes), then − ``edits.dtypes.exclude`` last;
- ``effective_mode``: ``force_xfail`` turns only ``mandatory_success`` into ``xfail``;
- ``effective_tolerance``: the most specific ``precision`` first, field by field, then
  ``DEFAULT_TOLERANCE[dtype]`` (exact for integer and bool dtypes).

Dtypes are torch dtype names without the ``torch.`` prefix (``"float16"``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from test_specs.format.schema import Precision
from test_specs.values.items import Tolerance
from test_specs.values.modes import Mode

#: Per-dtype default tolerances (assert_close ``atol``/``rtol``).  Spyre computes in fp16
#: (fp32 tensors are downcast, design §7), so float32 gets the float16 budget: fp16 eps is
#: 2**-10 ≈ 9.8e-4 and device/CPU accumulation orders differ, so ~10 ulp (1e-2) relative
#: and 1e-2 absolute (values near 0).  bfloat16 eps is 2**-7 ≈ 7.8e-3, so ~6 ulp: 5e-2.
DEFAULT_TOLERANCE: dict[str, Tolerance] = {
    "float16": Tolerance(atol=1e-2, rtol=1e-2),
    "float32": Tolerance(atol=1e-2, rtol=1e-2),
    "bfloat16": Tolerance(atol=5e-2, rtol=5e-2),
    "float64": Tolerance(atol=1e-7, rtol=1e-7),
}
EXACT = Tolerance(atol=0.0, rtol=0.0)  # integer and bool dtypes compare exactly


def dtype_names(dtypes: Iterable[Any]) -> set[str]:
    """``{"float16", ...}`` from torch dtypes (or their ``str``): the names specs use."""
    return {str(d).removeprefix("torch.") for d in dtypes}


def effective_dtypes(*, global_dtypes: set[str], op_dtypes: set[str], allowed: set[str] | None,
                     op_restrict: set[str] | None, include: set[str], exclude: set[str]) -> list[str]:
    """The dtype precedence of the module docstring; returns sorted names."""
    out = set(op_dtypes)
    if global_dtypes:
        out &= global_dtypes
    if allowed is not None:
        out &= allowed
    if op_restrict:
        out &= op_restrict
    out |= include & op_dtypes
    return sorted(out - exclude)


def effective_mode(base: Mode, force_xfail: bool) -> Mode:
    """``force_xfail`` turns only ``mandatory_success`` into ``xfail`` (torch-spyre rule)."""
    return "xfail" if force_xfail and base == "mandatory_success" else base


def effective_tolerance(dtype: str, *precisions: Precision | None) -> Tolerance:
    """Most specific first; each unset field falls through to the next, then to the default."""
    base = DEFAULT_TOLERANCE.get(dtype, EXACT)
    atol = next((p.atol for p in precisions if p is not None and p.atol is not None), base.atol)
    rtol = next((p.rtol for p in precisions if p is not None and p.rtol is not None), base.rtol)
    return Tolerance(atol=atol, rtol=rtol)
