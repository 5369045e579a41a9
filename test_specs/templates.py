"""Generic test templates: plain functions ``fn(op, dtype, device, tolerance) -> None``.

A template is our device-generic counterpart of one upstream test (``Template.upstream``), run
for one OpInfo (or, later, ModuleInfo) and one dtype.  It returns on success and raises
``TemplateFailure`` (an ``AssertionError`` with structured fields) on a mismatch or when the
device raises.

Templates are registered by their generic name (``TestCommon::test_compare_cpu``) in
``TEMPLATES``; a spec's ``tests[].names`` refer to them.  Extra modules that call ``register``
can be named in the environment variable ``SPYRE_SPEC_TEMPLATES`` (comma-separated import paths);
they are imported by ``load_extra_templates()`` and are never expanded unless a spec lists them
(``builtin=False``).  The test suite uses this hook for a fault-injection template.

To add a template (noncontiguous, ``out=``, module_db): write the function, ``register`` it with
its upstream test and allowed dtypes; ``expand`` and the plugin pick it up by name.
"""

from __future__ import annotations

import importlib
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Literal

import torch
from torch.utils._pytree import tree_flatten

from test_specs.items import Tolerance

TemplateFn = Callable[[Any, torch.dtype, str, Tolerance], None]

#: Seed set before each op call on either device, so random ops (dropout) draw the same numbers
#: when the device's generator follows ``torch.manual_seed`` (upstream's ``wrapper_set_seed``).
SAMPLE_SEED = 1234


@dataclass(frozen=True)
class Template:
    """``name``: generic ``Class::method``; ``upstream``: the mirrored upstream test id."""

    name: str
    upstream: str
    fn: TemplateFn
    kind: Literal["op", "module"] = "op"
    allowed_dtypes: frozenset[str] | None = None  # None: any dtype the op supports
    builtin: bool = True
    description: str = ""


class TemplateFailure(AssertionError):
    """A template's failure; ``str()`` is a short, readable one-paragraph message."""

    def __init__(self, *, op: str, dtype: str, sample: int | None, message: str,
                 max_abs: float | None = None, max_rel: float | None = None,
                 device_error: str | None = None):
        self.op, self.dtype, self.sample = op, dtype, sample
        self.max_abs, self.max_rel, self.device_error = max_abs, max_rel, device_error
        head = f"{op} [{dtype}] sample {sample}: " if sample is not None else f"{op} [{dtype}]: "
        errs = ""
        if max_abs is not None:
            errs = f" (max abs error {max_abs:.3g}, max rel error {max_rel:.3g})"
        super().__init__(head + message + errs)


TEMPLATES: dict[str, Template] = {}


def register(t: Template) -> Template:
    """Add ``t`` to ``TEMPLATES``.

    Re-registering a name from the same module (a module re-import) replaces the entry; a name
    registered from two different modules raises ``ValueError``.
    """
    old = TEMPLATES.get(t.name)
    if old is not None and old.fn.__module__ != t.fn.__module__:
        raise ValueError(f"template {t.name!r} registered by {old.fn.__module__} and {t.fn.__module__}")
    TEMPLATES[t.name] = t
    return t


def load_extra_templates() -> None:
    """Import the modules named in ``SPYRE_SPEC_TEMPLATES`` (comma-separated); idempotent."""
    for mod in filter(None, (m.strip() for m in os.environ.get("SPYRE_SPEC_TEMPLATES", "").split(","))):
        importlib.import_module(mod)


def op_subject(op: Any) -> str:
    """``name`` or ``name.variant``: how specs and item ids name an OpInfo."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def _mover(device: str) -> Callable[[Any], Any]:
    def move(t: Any) -> Any:
        return t.to(device) if isinstance(t, torch.Tensor) else t

    return move


def _errors(actual: Any, expected: Any) -> tuple[float, float, int]:
    """Max abs and max rel error over the elements finite in both of two pytrees (float64 math),
    and the count of elements finite on one side only (overflow to inf, NaN)."""
    a_leaves, _ = tree_flatten(actual)
    e_leaves, _ = tree_flatten(expected)
    max_abs = max_rel = 0.0
    nonfinite = 0
    for a, e in zip(a_leaves, e_leaves):
        if not (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor)) or a.shape != e.shape:
            continue
        if a.numel() == 0 or not (a.is_floating_point() or a.is_complex()):
            continue
        a64, e64 = a.detach().to(torch.float64), e.detach().to(torch.float64)
        finite = torch.isfinite(a64) & torch.isfinite(e64)
        nonfinite += int((torch.isfinite(a64) != torch.isfinite(e64)).sum())
        if not finite.any():
            continue
        diff = (a64 - e64).abs()[finite]
        rel = diff / e64.abs()[finite].clamp_min(torch.finfo(torch.float64).tiny)
        max_abs = max(max_abs, float(diff.max()))
        max_rel = max(max_rel, float(rel.max()))
    return max_abs, (max_rel if math.isfinite(max_rel) else float("inf")), nonfinite


def compare_cpu(op: Any, dtype: torch.dtype, device: str, tol: Tolerance) -> None:
    """Each CPU sample of ``op`` at ``dtype``: run on CPU and on ``device``; outputs must agree.

    Inputs are made on CPU by ``op.sample_inputs("cpu", dtype)`` and copied with ``.to(device)``
    (tensors in input, args and kwargs).  The device output is moved to CPU and compared with
    ``torch.testing.assert_close(atol=tol.atol, rtol=tol.rtol, equal_nan=True)``; dtypes must
    match.  Raises ``TemplateFailure`` naming the op, dtype, sample index and the max abs/rel
    error, or the exception the device raised.  Mirrors upstream
    ``test/test_ops.py::TestCommon::test_compare_cpu`` (which builds samples on the device).
    """
    name, dname = op_subject(op), str(dtype).removeprefix("torch.")
    to_dev, to_cpu = _mover(device), _mover("cpu")
    for i, sample in enumerate(op.sample_inputs("cpu", dtype)):
        dev_sample = sample.transform(to_dev)
        torch.manual_seed(SAMPLE_SEED)
        expected = sample.output_process_fn_grad(op(sample.input, *sample.args, **sample.kwargs))
        try:
            torch.manual_seed(SAMPLE_SEED)
            out = op(dev_sample.input, *dev_sample.args, **dev_sample.kwargs)
            actual = tree_map_tensors(sample.output_process_fn_grad(out), to_cpu)
        except Exception as e:  # the device refusing or crashing in Python is a test failure
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            raise TemplateFailure(op=name, dtype=dname, sample=i, message=f"device raised {type(e).__name__}: {first}",
                                  device_error=type(e).__name__) from None
        try:
            torch.testing.assert_close(actual, expected, atol=tol.atol, rtol=tol.rtol, equal_nan=True)
        except AssertionError as e:
            max_abs, max_rel, nonfinite = _errors(actual, expected)
            first = str(e).strip().splitlines()[0]
            extra = f"; {nonfinite} elements inf/nan on one side only" if nonfinite else ""
            raise TemplateFailure(op=name, dtype=dname, sample=i, max_abs=max_abs, max_rel=max_rel,
                                  message=f"device output differs from CPU (atol {tol.atol:g}, rtol {tol.rtol:g}): {first}{extra}") from None


def tree_map_tensors(tree: Any, f: Callable[[Any], Any]) -> Any:
    """Apply ``f`` to every tensor in a nested tuple/list/dict output."""
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: f(x) if isinstance(x, torch.Tensor) else x, tree)


FLOATING = frozenset({"float16", "bfloat16", "float32", "float64"})

register(Template(
    name="TestCommon::test_compare_cpu",
    upstream="test/test_ops.py::TestCommon::test_compare_cpu",
    fn=compare_cpu,
    allowed_dtypes=FLOATING,
    description="device output equals the CPU output for every sample input",
))
