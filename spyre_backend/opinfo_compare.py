"""Compare one OpInfo in one dtype on a device under test against the CPU reference.

The comparison mirrors torch-spyre's ``compare_cpu`` tests (design §7): every sample from
``opinfo.sample_inputs("cpu", dtype)`` is run on the CPU (the reference), its tensors are moved
to the device under test (``.to(device)``; ``.clone()`` when the device is the CPU, so both
runs copy the same bytes), the op runs there, the results come back with ``.cpu()`` and are
compared with ``torch.testing.assert_close`` at ``TOLERANCES[dtype]`` (``equal_nan=True``).

``check_op`` returns a ``spyre_backend.opinfo_results.Outcome``; statuses are defined there.
Order of precedence within one (op, dtype): the first not_implemented / cpu_reference_error /
error sample ends the comparison; mismatches are counted over all samples.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

from .errors import SpyreError
from .opinfo_results import Outcome

__all__ = ["TOLERANCES", "subject_name", "check_op", "check_grad", "max_errors"]

# (atol, rtol): fp16-level; float32 is computed in fp16, so its rtol is one fp16 ulp wider.
TOLERANCES = {
    "float16": (1e-2, 1e-2),
    "bfloat16": (1e-1, 1.6e-2),
    "float32": (1e-2, 1.6e-2),
}


def subject_name(opinfo) -> str:
    """``"name"`` or ``"name.variant_test_name"`` — the table's subject key."""
    return f"{opinfo.name}.{opinfo.variant_test_name}" if opinfo.variant_test_name else opinfo.name


def _move(tree: Any, device: str) -> Any:
    if device == "cpu":
        return tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, tree)
    return tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, tree)


def _to_cpu(tree: Any) -> Any:
    return tree_map(lambda x: x.cpu() if isinstance(x, torch.Tensor) else x, tree)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300] if text else ''}"


def max_errors(actual: Any, expected: Any) -> tuple[float | None, float | None]:
    """Largest finite absolute and relative error between matching tensor leaves.

    Relative error is ``|a - e| / |e|`` over elements with ``e != 0``. ``None`` when no
    element pair is comparable (different structure/shapes, or only non-finite values).
    """
    a_leaves, _ = tree_flatten(actual)
    e_leaves, _ = tree_flatten(expected)
    max_abs: float | None = None
    max_rel: float | None = None
    for a, e in zip(a_leaves, e_leaves, strict=False):  # trees may differ: assert_close says how
        if not (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor)) or a.shape != e.shape:
            continue
        if a.is_complex() or e.is_complex():
            a, e = torch.view_as_real(a.resolve_conj()), torch.view_as_real(e.resolve_conj())
        a, e = a.detach().double(), e.detach().double()
        ok = torch.isfinite(a) & torch.isfinite(e)
        if not ok.any():
            continue
        diff = (a - e).abs()[ok]
        max_abs = max(max_abs or 0.0, diff.max().item())
        ref = e.abs()[ok]
        nz = ref > 0
        if nz.any():
            max_rel = max(max_rel or 0.0, (diff[nz] / ref[nz]).max().item())
    return max_abs, max_rel


def _refusal(subject: str, dtype: str, n: int, exc: SpyreError) -> Outcome:
    aten_op = getattr(exc, "aten_op", None)
    reason = getattr(exc, "reason", None) or _first_line(exc)
    return Outcome(subject, dtype, "not_implemented", samples=n, aten_op=aten_op, reason=reason)


def check_op(opinfo, dtype: torch.dtype, device: str = "spyre", timing: dict | None = None,
             clock: Callable[[], float] = time.perf_counter) -> Outcome:
    """Compare ``opinfo`` in ``dtype`` on ``device`` with the CPU (see the module docstring).

    ``timing``, if given, accumulates seconds spent on the device side (``"device_s"``: move,
    run, move back) and counts ``"samples"``, read from ``clock`` (seconds; wall time by default,
    ``time.process_time`` for this process's CPU time); used by ``bench/device_overhead.py``.
    """
    dname = str(dtype).removeprefix("torch.")
    subject = subject_name(opinfo)
    if dtype not in opinfo.supported_dtypes("cpu"):
        return Outcome(subject, dname, "skip", reason=f"OpInfo declares no {dname} on the CPU")
    atol, rtol = TOLERANCES[dname]
    n = bad = 0
    max_abs = max_rel = None
    numeric = True
    for sample in opinfo.sample_inputs("cpu", dtype):
        n += 1
        try:
            expected = opinfo(sample.input, *sample.args, **sample.kwargs)
        except Exception as exc:  # noqa: BLE001 - the reference failing is an outcome
            return Outcome(subject, dname, "cpu_reference_error", samples=n, reason=f"sample {n}: {_first_line(exc)}")
        t0 = clock()
        try:
            sinput, sargs, skwargs = _move((sample.input, sample.args, sample.kwargs), device)
            actual = _to_cpu(opinfo(sinput, *sargs, **skwargs))
        except SpyreError as exc:
            return _refusal(subject, dname, n, exc)
        except Exception as exc:  # noqa: BLE001 - report, don't crash the sweep
            return Outcome(subject, dname, "error", samples=n, reason=f"sample {n}: {_first_line(exc)}")
        if timing is not None:
            timing["device_s"] = timing.get("device_s", 0.0) + clock() - t0
            timing["samples"] = timing.get("samples", 0) + 1
        try:
            torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol, equal_nan=True, check_device=False)
        except AssertionError:
            bad += 1
            a, r = max_errors(actual, expected)
            numeric = numeric and a is not None
            max_abs = a if max_abs is None else max(max_abs, a or 0.0)
            max_rel = r if max_rel is None else max(max_rel, r or 0.0)
    if n == 0:
        return Outcome(subject, dname, "skip", reason="OpInfo yields no samples")
    if bad:
        reason = None if numeric else "some mismatches are not numeric (NaN/inf placement, shape or structure)"
        return Outcome(subject, dname, "mismatch", samples=n, mismatched=bad,
                       max_abs_err=_round(max_abs), max_rel_err=_round(max_rel), reason=reason)
    return Outcome(subject, dname, "pass", samples=n)


def _round(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None if x is None else float(x)
    return float(f"{x:.4g}")


def _grad_tensors(x) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    tree_map(lambda t: out.append(t) if isinstance(t, torch.Tensor) and t.requires_grad else None, x)
    return out


def check_grad(opinfo, dtype: torch.dtype, device: str = "spyre") -> Outcome:
    """Like ``check_op`` but compares input gradients of ``sum(outputs)`` (backward on ``device``)."""
    dname = str(dtype).removeprefix("torch.")
    subject = subject_name(opinfo)
    if not opinfo.supports_autograd or dtype not in opinfo.supported_backward_dtypes("cpu"):
        return Outcome(subject, dname, "skip", reason="no autograd in this dtype")
    atol, rtol = TOLERANCES[dname]
    n = 0
    for sample in opinfo.sample_inputs("cpu", dtype, requires_grad=True):
        n += 1
        cpu_in = (sample.input, sample.args, sample.kwargs)
        try:
            outs = _grad_tensors(opinfo(sample.input, *sample.args, **sample.kwargs))
            leaves = _grad_tensors(cpu_in)
            if not outs or not leaves:
                continue
            expected = torch.autograd.grad(sum(o.sum() for o in outs), leaves, allow_unused=True)
        except Exception as exc:  # noqa: BLE001
            return Outcome(subject, dname, "cpu_reference_error", samples=n, reason=f"sample {n}: {_first_line(exc)}")

        def move(t):
            if not isinstance(t, torch.Tensor):
                return t
            return t.detach().to(device).requires_grad_(t.requires_grad)

        dev_in = tree_map(move, cpu_in)
        try:
            douts = _grad_tensors(opinfo(dev_in[0], *dev_in[1], **dev_in[2]))
            actual = _to_cpu(torch.autograd.grad(sum(o.sum() for o in douts), _grad_tensors(dev_in), allow_unused=True))
        except SpyreError as exc:
            return _refusal(subject, dname, n, exc)
        except Exception as exc:  # noqa: BLE001
            return Outcome(subject, dname, "error", samples=n, reason=f"sample {n}: {_first_line(exc)}")
        try:
            torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol, equal_nan=True, check_device=False)
        except AssertionError:
            a, r = max_errors(actual, expected)
            return Outcome(subject, dname, "mismatch", samples=n, mismatched=1, max_abs_err=_round(a),
                           max_rel_err=_round(r))
    return Outcome(subject, dname, "pass", samples=n)
