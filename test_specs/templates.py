"""Generic test templates: plain functions ``fn(op, dtype, device, tolerance) -> None``.

A template is our device-generic counterpart of one upstream test (``Template.upstream``), run
for one OpInfo (``kind="op"``) or one ModuleInfo (``kind="module"``, first argument a ModuleInfo)
and one dtype.  It returns on success and raises ``TemplateFailure`` (an ``AssertionError`` with
structured fields) on a mismatch or when the device raises, or ``TemplateSkip``
(``unittest.SkipTest``) when the upstream test it mirrors would skip too.

Sample cap: templates iterate samples through ``capped(...)``, which stops after
``max_samples`` samples when one is set (``with sample_cap(n): ...``; the plugin sets it from
the item's ``max_samples``, i.e. the spec's ``global.input_config.max_samples``).  Upstream
tests run every sample; the cap bounds per-item cost for whole-database sweeps.

Templates are registered by their generic name (``TestCommon::test_compare_cpu``) in
``TEMPLATES``; a spec's ``tests[].names`` refer to them.  Extra modules that call ``register``
can be named in the environment variable ``SPYRE_SPEC_TEMPLATES`` (comma-separated import paths);
they are imported by ``load_extra_templates()`` and are never expanded unless a spec lists them
(``builtin=False``).  The test suite uses this hook for a fault-injection template.

To add a template: write the function, ``register`` it with its upstream test, allowed dtypes
and (optionally) ``applies`` (a predicate on the OpInfo/ModuleInfo; items are expanded only for
subjects it accepts, e.g. ``op.supports_out`` for ``test_out``).  Op templates live in
``op_templates``, module templates in ``module_templates``; both register on import of this
module.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import itertools
import math
import os
import unittest
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Literal

import torch
from torch.utils._pytree import tree_flatten

from test_specs.items import Tolerance

TemplateFn = Callable[[Any, torch.dtype, str, Tolerance], None]

#: Seed set before each op call (``seed_cpu``), so random ops (dropout) draw the same numbers on
#: the CPU (upstream's ``wrapper_set_seed``); the device has no random kernels (design §7).
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
    applies: Callable[[Any], bool] | None = None  # None: every subject of ``kind``


class TemplateSkip(unittest.SkipTest):
    """Raised when the mirrored upstream test would skip too (pytest reports ``skipped``)."""


_MAX_SAMPLES: contextvars.ContextVar[int | None] = contextvars.ContextVar("max_samples", default=None)


@contextlib.contextmanager
def sample_cap(n: int | None) -> Iterator[None]:
    """Within the block, ``capped`` yields at most ``n`` samples (``None``: all)."""
    token = _MAX_SAMPLES.set(n)
    try:
        yield
    finally:
        _MAX_SAMPLES.reset(token)


def seed_cpu(seed: int = SAMPLE_SEED) -> None:
    """Seed the CPU generator, ``random`` and NumPy: what CPU sample generation draws from.

    ``torch.manual_seed`` also seeds every accelerator module; on CUDA builds that queues a lazy
    call with ``traceback.format_stack()`` (~20 ms under pytest), paid per sample.  Device-side
    random ops are denied on Spyre (design §7), so the CPU generators are the ones that matter.
    """
    import random

    import numpy as np

    torch.default_generator.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


@contextlib.contextmanager
def fast_sample_inputs() -> Iterator[None]:
    """Within the block, OpInfo sample iteration skips two per-sample costs, same samples.

    ``common_utils.TrackedInputIter`` (torch.testing._internal) crawls the stack with
    ``inspect.stack()`` to find a ``unittest.TestCase`` (there is none in a spec item, so it
    finds ``None`` after ~0.2 s) and calls ``set_rng_seed(SEED)`` before each sample; here
    ``extract_test_fn`` returns ``None`` at once and ``set_rng_seed`` seeds like ``seed_cpu``.
    """
    from torch.testing._internal import common_utils as cu

    saved = cu.extract_test_fn, cu.set_rng_seed
    cu.extract_test_fn = lambda: None
    cu.set_rng_seed = lambda seed=None: seed_cpu(cu.SEED if seed is None else seed)
    try:
        yield
    finally:
        cu.extract_test_fn, cu.set_rng_seed = saved


def capped(samples: Iterable[Any]) -> Iterator[Any]:
    """The first ``max_samples`` of ``samples`` (all when no cap is set); lazy."""
    n = _MAX_SAMPLES.get()
    return iter(samples) if n is None else itertools.islice(samples, n)


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


def device_call(fn: Callable[[], Any], *, name: str, dtype: str, sample: int | None) -> Any:
    """``fn()``; any exception it raises becomes a ``TemplateFailure`` naming the device error."""
    try:
        return fn()
    except (TemplateFailure, unittest.SkipTest):
        raise
    except Exception as e:  # the device refusing or crashing in Python is a test failure
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise TemplateFailure(op=name, dtype=dtype, sample=sample, message=f"device raised {type(e).__name__}: {first}",
                              device_error=type(e).__name__) from None


def check_close(actual: Any, expected: Any, tol: Tolerance, *, name: str, dtype: str, sample: int | None,
                what: str = "device output differs from CPU") -> None:
    """``assert_close(actual, expected, atol, rtol, equal_nan=True)`` on CPU copies of both pytrees;
    on a mismatch raises ``TemplateFailure`` with the max abs/rel error and the first message line."""
    to_cpu = _mover("cpu")
    actual, expected = tree_map_tensors(actual, to_cpu), tree_map_tensors(expected, to_cpu)
    try:
        torch.testing.assert_close(actual, expected, atol=tol.atol, rtol=tol.rtol, equal_nan=True)
    except AssertionError as e:
        max_abs, max_rel, nonfinite = _errors(actual, expected)
        first = str(e).strip().splitlines()[0]
        extra = f"; {nonfinite} elements inf/nan on one side only" if nonfinite else ""
        raise TemplateFailure(op=name, dtype=dtype, sample=sample, max_abs=max_abs, max_rel=max_rel,
                              message=f"{what} (atol {tol.atol:g}, rtol {tol.rtol:g}): {first}{extra}") from None


def compare_cpu(op: Any, dtype: torch.dtype, device: str, tol: Tolerance) -> None:
    """Each CPU sample of ``op`` at ``dtype`` (up to the sample cap): run on CPU and on ``device``;
    outputs must agree.

    Inputs are made on CPU by ``op.sample_inputs("cpu", dtype)`` and copied with ``.to(device)``
    (tensors in input, args and kwargs).  The device output is moved to CPU and compared with
    ``torch.testing.assert_close(atol=tol.atol, rtol=tol.rtol, equal_nan=True)``; dtypes must
    match.  Raises ``TemplateFailure`` naming the op, dtype, sample index and the max abs/rel
    error, or the exception the device raised.  Mirrors upstream
    ``test/test_ops.py::TestCommon::test_compare_cpu`` (which builds samples on the device).
    """
    name, dname = op_subject(op), str(dtype).removeprefix("torch.")
    to_dev, to_cpu = _mover(device), _mover("cpu")
    for i, sample in enumerate(capped(op.sample_inputs("cpu", dtype))):
        dev_sample = sample.transform(to_dev)
        seed_cpu()
        expected = sample.output_process_fn_grad(op(sample.input, *sample.args, **sample.kwargs))

        def run(s: Any = dev_sample) -> Any:
            seed_cpu()
            out = op(s.input, *s.args, **s.kwargs)
            return tree_map_tensors(sample.output_process_fn_grad(out), to_cpu)

        actual = device_call(run, name=name, dtype=dname, sample=i)
        check_close(actual, expected, tol, name=name, dtype=dname, sample=i)


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

from test_specs import module_templates, op_templates  # noqa: E402,F401  (register on import)
