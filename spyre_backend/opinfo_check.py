"""Measure which OpInfo (op, dtype) pairs run on Spyre and match the CPU.

``python -m spyre_backend.opinfo_check [--ops add,mul,...] [--dtypes float16,float32] [--json]``

For each OpInfo in ``op_db`` named in ``--ops`` (default ``FIRST_SPEC_OPS``) and each dtype,
every sample from ``op.sample_inputs("cpu", dtype)`` is run on the CPU and on Spyre (sample
tensors moved with ``.to("spyre")``), and the outputs compared with
``torch.testing.assert_close`` at ``TOLERANCES[dtype]``. A pair is ``pass`` when every sample
matches, ``unsupported`` when Spyre refuses a sample (the first aten reason is kept),
``mismatch`` when a sample differs, ``error`` on any other exception. ``--grad`` compares the
input gradients of ``sum(outputs)`` instead (backward run on Spyre).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

import spyre_backend  # noqa: F401  (must precede torch.testing._internal imports)
import torch
from torch.utils._pytree import tree_map

from .errors import SpyreDtypeError, SpyreUnsupportedOpError

__all__ = ["FIRST_SPEC_OPS", "TOLERANCES", "check_op", "main"]

FIRST_SPEC_OPS = (
    "add sub mul div neg abs exp log sqrt rsqrt tanh sigmoid sin cos nn.functional.relu "
    "nn.functional.gelu nn.functional.silu softmax log_softmax sum mean amax matmul mm bmm addmm "
    "addcmul addcdiv where clamp pow transpose permute reshape cat stack nn.functional.layer_norm "
    "nn.functional.linear nn.functional.embedding var cumsum index_put nn.functional.dropout"
).split()

# (atol, rtol): fp16-level; float32 is computed in fp16, so its rtol is one fp16 ulp wider.
TOLERANCES = {
    "float16": (1e-2, 1e-2),
    "bfloat16": (1e-1, 1.6e-2),
    "float32": (1e-2, 1.6e-2),
}


def _to(x, device):
    return x.to(device) if isinstance(x, torch.Tensor) else x


def check_op(opinfo, dtype: torch.dtype) -> tuple[str, str]:
    """``(status, detail)`` for one OpInfo in one dtype (see the module docstring)."""
    atol, rtol = TOLERANCES[str(dtype).removeprefix("torch.")]
    n = 0
    for sample in opinfo.sample_inputs("cpu", dtype):
        n += 1
        expected = opinfo(sample.input, *sample.args, **sample.kwargs)
        sinput, sargs, skwargs = tree_map(lambda x: _to(x, "spyre"), (sample.input, sample.args, sample.kwargs))
        try:
            actual = opinfo(sinput, *sargs, **skwargs)
        except (SpyreUnsupportedOpError, SpyreDtypeError) as exc:
            return "unsupported", str(exc).splitlines()[0]
        except Exception as exc:  # noqa: BLE001 - report, don't crash the sweep
            return "error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        actual = tree_map(lambda x: _to(x, "cpu"), actual)
        try:
            torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol, equal_nan=True, check_device=False)
        except AssertionError as exc:
            lines = [ln.strip() for ln in str(exc).splitlines() if "Greatest" in ln or "Mismatched" in ln]
            return "mismatch", f"sample {n}: " + "; ".join(lines)
    return "pass", f"{n} samples"


def _grad_tensors(x) -> list[torch.Tensor]:
    """Tensors in pytree ``x`` that require grad (sample leaves, or differentiable outputs)."""
    out: list[torch.Tensor] = []
    tree_map(lambda t: out.append(t) if isinstance(t, torch.Tensor) and t.requires_grad else None, x)
    return out


def check_grad(opinfo, dtype: torch.dtype) -> tuple[str, str]:
    """Like ``check_op`` but compares input gradients of ``sum(outputs)`` (backward on Spyre)."""
    if not opinfo.supports_autograd:
        return "pass", "no autograd"
    atol, rtol = TOLERANCES[str(dtype).removeprefix("torch.")]
    n = 0
    for sample in opinfo.sample_inputs("cpu", dtype, requires_grad=True):
        n += 1
        cpu_in = (sample.input, sample.args, sample.kwargs)
        outs = _grad_tensors(opinfo(sample.input, *sample.args, **sample.kwargs))
        leaves = _grad_tensors(cpu_in)
        if not outs or not leaves:
            continue
        expected = torch.autograd.grad(sum(o.sum() for o in outs), leaves, allow_unused=True)

        def move(t):
            if not isinstance(t, torch.Tensor):
                return t
            return t.detach().to("spyre").requires_grad_(t.requires_grad)

        dev_in = tree_map(move, cpu_in)
        try:
            douts = _grad_tensors(opinfo(dev_in[0], *dev_in[1], **dev_in[2]))
            actual = torch.autograd.grad(sum(o.sum() for o in douts), _grad_tensors(dev_in), allow_unused=True)
        except (SpyreUnsupportedOpError, SpyreDtypeError) as exc:
            return "unsupported", str(exc).splitlines()[0]
        except Exception as exc:  # noqa: BLE001
            return "error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        actual = tree_map(lambda x: _to(x, "cpu"), actual)
        try:
            torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol, equal_nan=True, check_device=False)
        except AssertionError as exc:
            lines = [ln.strip() for ln in str(exc).splitlines() if "Greatest" in ln or "Mismatched" in ln]
            return "mismatch", f"sample {n}: " + "; ".join(lines)
    return "pass", f"{n} samples"


def main(argv: list[str] | None = None) -> int:
    """Run the sweep and print one line per (op, dtype) (or JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default=",".join(FIRST_SPEC_OPS))
    parser.add_argument("--dtypes", default="float16,float32")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--grad", action="store_true", help="compare gradients instead of outputs")
    ns = parser.parse_args(argv)
    from torch.testing._internal.common_methods_invocations import op_db

    wanted = ns.ops.split(",")
    by_name: dict[str, list] = {}
    for o in op_db:
        if o.name in wanted:
            by_name.setdefault(o.name, []).append(o)
    rows = []
    warnings.simplefilter("ignore")
    for name in wanted:
        for opinfo in by_name.get(name, []):
            for dt in ns.dtypes.split(","):
                torch.manual_seed(0)
                check = check_grad if ns.grad else check_op
                status, detail = check(opinfo, getattr(torch, dt))
                variant = f"{opinfo.name}{'.' + opinfo.variant_test_name if opinfo.variant_test_name else ''}"
                rows.append({"op": variant, "dtype": dt, "status": status, "detail": detail})
    if ns.json:
        json.dump(rows, sys.stdout, indent=1)
    else:
        for r in rows:
            print(f"{r['op']:<32} {r['dtype']:<9} {r['status']:<12} {r['detail'][:150]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
