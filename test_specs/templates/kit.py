"""The pieces every test template is built from; the registry is ``test_specs.templates.registry``.

A template is our device-generic counterpart of one upstream test (``Template.upstream``): a
plain function ``fn(subject, dtype, device, tolerance) -> None`` run for one OpInfo
(``kind="op"``) or one ModuleInfo (``kind="module"``) and one dtype (a ``torch.dtype``) on
``device`` (``"spyre"`` or ``"cpu"``).  It returns on success and raises ``TemplateFailure`` (an
``AssertionError`` with structured fields) on a mismatch or when the device raises, or
``TemplateSkip`` (``unittest.SkipTest``) when the upstream test it mirrors would skip too.

Sample cap: templates iterate samples through ``capped(...)``, which stops after
``max_samples`` samples when one is set (``with sample_cap(n): ...``; the plugin sets it from
the item's ``max_samples``, i.e. the spec's ``global.input_config.max_samples``).  Upstream
tests run every sample; the cap bounds per-item cost for whole-database sweeps.

Comparison helpers: ``check_close`` (``torch.testing.assert_close`` on CPU copies; a failure
carries the max abs/rel error), ``device_call`` (a device exception becomes a
``TemplateFailure``), ``to_device_keeping_strides`` (a strided view moved as a view),
``seed_cpu`` (the generators CPU sample generation draws from).
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import math
import unittest
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch.utils._pytree import tree_flatten

from test_specs.values.items import Tolerance

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


def op_subject(op: Any) -> str:
    """``name`` or ``name.variant``: how specs and item ids name an OpInfo."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def mover(device: str) -> Callable[[Any], Any]:
    """A function moving a tensor to ``device`` (``t.to(device)``) and passing anything else."""

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
    for a, e in zip(a_leaves, e_leaves, strict=False):  # trees may differ: assert_close says how
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
    to_cpu = mover("cpu")
    actual, expected = tree_map_tensors(actual, to_cpu), tree_map_tensors(expected, to_cpu)
    try:
        torch.testing.assert_close(actual, expected, atol=tol.atol, rtol=tol.rtol, equal_nan=True)
    except AssertionError as e:
        max_abs, max_rel, nonfinite = _errors(actual, expected)
        first = str(e).strip().splitlines()[0]
        extra = f"; {nonfinite} elements inf/nan on one side only" if nonfinite else ""
        raise TemplateFailure(op=name, dtype=dtype, sample=sample, max_abs=max_abs, max_rel=max_rel,
                              message=f"{what} (atol {tol.atol:g}, rtol {tol.rtol:g}): {first}{extra}") from None


def tree_map_tensors(tree: Any, f: Callable[[Any], Any]) -> Any:
    """Apply ``f`` to every tensor in a nested tuple/list/dict output."""
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: f(x) if isinstance(x, torch.Tensor) else x, tree)


FLOATING = frozenset({"float16", "bfloat16", "float32", "float64"})


def to_device_keeping_strides(t: torch.Tensor, device: str) -> torch.Tensor:
    """``t`` on ``device`` keeping its strides when ``t`` is a strided view of a dense base
    (``noncontiguous_like``): the base is moved and the same view taken on the device."""
    base = t._base
    if base is None or t.is_contiguous() or not base.is_contiguous():
        return t.detach().to(device).requires_grad_(t.requires_grad)
    dev = base.detach().to(device).as_strided(t.size(), t.stride(), t.storage_offset())
    return dev.requires_grad_(t.requires_grad)
