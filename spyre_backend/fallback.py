"""The boxed PrivateUse1 fallback: every aten op that reaches the Spyre key runs here.

Called once per aten op call whose dispatch key set selects PrivateUse1 (any device tensor
argument, or ``device="spyre"``). Steps, in order:

1. look the overload up in the support table (``spyre_backend.support``); absent or denied →
   torch's own argument error if the call is invalid (``validation``), else
   ``SpyreUnsupportedOpError`` (a ``NotImplementedError``) naming the aten op; then the
   capability rules (``spyre_backend.capabilities``: in-device copies, non-contiguous kernel
   inputs, kernels the Spyre stack lacks) → ``SpyreCompileError`` / ``SpyreUnsupportedOpError``;
2. check the dtype of every device tensor argument → ``SpyreDtypeError`` (a ``TypeError``), and
   that no CPU tensor (other than a 0-dim scalar) is mixed in → PyTorch's same-device
   ``RuntimeError`` (copies and CPU index tensors excepted, as on CUDA);
3. replace device tensors by CPU aliases of the same bytes (``tensors.cpu_alias``) and a
   ``device="spyre"`` argument by the CPU; apply the fp32→fp16 policy of ``numerics`` and the
   adapter named in the table, if any;
4. run the op on the CPU and map results back by the schema's alias annotations: fresh results
   are copied into new device memory, in-place/out results are the original arguments, and
   view results become device views over the argument's device storage.

Fault injection (``spyre_backend.faults``) hooks around step 4 only when configured; the
device trace (``spyre_backend.trace``, ``SPYRE_SIM_TRACE``) records each overload before step 1.
"""

from __future__ import annotations

from typing import Any

import torch

from . import adapters, capabilities, device_module, faults, gemm, numerics, tensors, trace, validation
from .errors import SpyreDtypeError, SpyreUnsupportedOpError
from .overloads import REJECTED_DTYPES, OverloadFacts, ReturnKind

__all__ = ["spyre_fallback", "DEVICE_TYPE"]

DEVICE_TYPE = "spyre"
_facts: dict[Any, OverloadFacts] = {}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _check_dtype(info: OverloadFacts, dtype: torch.dtype) -> None:
    if dtype in info.dtype_objs:
        return
    name = _dtype_name(dtype)
    if dtype in REJECTED_DTYPES or name not in info.dtypes:
        why = f"does not support dtype {name} on Spyre (supported: {', '.join(sorted(info.dtypes))})"
        raise SpyreDtypeError(f"spyre: {info.full} {why}", aten_op=info.full, reason=why)


def _is_dev(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == DEVICE_TYPE


def _to_cpu(info: OverloadFacts, x: Any, downcast: list) -> Any:
    if isinstance(x, torch.Tensor):
        if x.device.type != DEVICE_TYPE:
            return x
        _check_dtype(info, x.dtype)
        alias = tensors.cpu_alias(x)
        if downcast is not None and x.dtype is torch.float32:
            downcast.append(alias)
            return alias.to(torch.float16)
        return alias
    if isinstance(x, (list, tuple)) and x and any(isinstance(e, torch.Tensor) for e in x):
        return type(x)(_to_cpu(info, e, downcast) for e in x)
    return x


def _check_same_device(args: tuple, kwargs: dict, device: torch.device) -> None:
    """PyTorch's cross-device error for a CPU tensor (not a 0-dim scalar) mixed with device tensors.

    Raises:
        RuntimeError: "Expected all tensors to be on the same device, ..." (as TensorIterator says).
    """
    for x in (*args, *kwargs.values()):
        for t in (x if isinstance(x, (list, tuple)) else (x,)):
            if isinstance(t, torch.Tensor) and t.dim() > 0 and t.device.type != DEVICE_TYPE:
                raise RuntimeError(
                    "Expected all tensors to be on the same device, but found at least two devices, "
                    f"{device} and {t.device}!"
                )


def _has_fp32_device_tensor(args: tuple, kwargs: dict) -> bool:
    for x in (*args, *kwargs.values()):
        if isinstance(x, torch.Tensor):
            if x.dtype is torch.float32 and x.device.type == DEVICE_TYPE:
                return True
        elif isinstance(x, (list, tuple)):
            if any(isinstance(e, torch.Tensor) and e.dtype is torch.float32 and e.device.type == DEVICE_TYPE
                   for e in x):
                return True
    return False


def _unsupported(info: OverloadFacts) -> SpyreUnsupportedOpError:
    if info.row is None:
        why = f"{info.name} is not in the Spyre op support table"
    else:
        why = f"{info.row.name} {info.row.reason}"
    return SpyreUnsupportedOpError(f"spyre: {info.full} is not supported on Spyre: {why}", aten_op=info.full,
                                   reason=why)


def spyre_fallback(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    """Run ``op`` for device tensors on CPU memory (see the module docstring)."""
    if not trace.ACTIVE:
        return _run(op, args, kwargs)
    with trace.reached(op):  # opt-in ground truth of what reached the device (``spyre_backend.trace``)
        return _run(op, args, kwargs)


def _run(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    info = _facts.get(op)
    if info is None:
        info = _facts[op] = OverloadFacts(op, _SPECIAL)
    row = info.row
    if row is None or not row.supported:  # torch's own argument errors come first (validation)
        raise validation.torch_error_first(op, args, kwargs) or _unsupported(info)
    if info.caps:  # what real Spyre rejects although the op has a kernel (capabilities.yaml)
        capabilities.check(op, info.full, info.caps, args, kwargs)
    if info.handler is not None:
        return info.handler(info, op, args, kwargs)

    # Target device of fresh results: an explicit device argument wins.
    out_device: torch.device | None = None
    dev_arg = kwargs.get("device")
    if dev_arg is not None:
        dev_arg = torch.device(dev_arg)
        if dev_arg.type == DEVICE_TYPE:
            out_device = dev_arg
            kwargs = dict(kwargs, device=torch.device("cpu"))
            dt = kwargs.get("dtype")
            _check_dtype(info, dt if dt is not None else torch.get_default_dtype())
    else:
        for x in (*args, *kwargs.values()):
            if _is_dev(x) or (isinstance(x, (list, tuple)) and any(_is_dev(e) for e in x)):
                out_device = x.device if _is_dev(x) else next(e.device for e in x if _is_dev(e))
                break
        if out_device is not None and info.same_device:
            _check_same_device(args, kwargs, out_device)

    downcast: list | None = None
    if row.category == "compute" and numerics.downcast_fp32 and _has_fp32_device_tensor(args, kwargs):
        numerics.warn_downcast_once(info.full)
        downcast = []
    cargs = tuple(_to_cpu(info, a, downcast) for a in args)
    ckwargs = {k: _to_cpu(info, v, downcast) for k, v in kwargs.items()}
    if downcast is not None and ckwargs.get("dtype") is torch.float32:
        ckwargs["dtype"] = torch.float16
    if row.category == "random" and ckwargs.get("generator") is None:
        ckwargs["generator"] = device_module.generator()

    if info.outs:
        cargs, ckwargs, outs = _detach_outs(info, args, kwargs, cargs, ckwargs, downcast is not None)

    fault = (faults.FAULTS.get(info.name) or faults.FAULTS.get(info.full)) if faults.FAULTS else None
    if fault is not None:
        faults.before_op(fault)
    if row.adapter is not None:
        result = adapters.run(row.adapter, op, cargs, ckwargs)
    elif info.name in gemm.GEMM_OPS and gemm.applies(info.name, len(info.mutated) > len(info.outs), cargs, ckwargs) \
            and all(n in ckwargs for _, n in info.outs):  # fp16 operands, fp32 accumulation (gemm)
        result = gemm.run(op, cargs, ckwargs, [n for _, n in info.outs])
    else:
        result = op(*cargs, **ckwargs)

    if info.outs:
        _fill_outs(outs)
    if downcast:
        _write_back(info, args, kwargs, cargs, ckwargs)
    return _wrap_results(info, op, result, args, kwargs, out_device, downcast is not None, fault)


def _detach_outs(info: OverloadFacts, args, kwargs, cargs, ckwargs, downcast: bool):
    """Give the CPU kernel fresh, resizable CPU ``out=`` tensors (device memory cannot be
    resized by a CPU kernel); ``_fill_outs`` moves the results into the device tensors."""
    cargs, ckwargs, outs = list(cargs), dict(ckwargs), []
    for pos, name in info.outs:
        orig = args[pos] if pos < len(args) else kwargs.get(name)
        if not _is_dev(orig):
            continue
        dtype = torch.float16 if downcast and orig.dtype is torch.float32 else orig.dtype
        tmp = torch.empty(0, dtype=dtype)
        if pos < len(cargs):
            cargs[pos] = tmp
        else:
            ckwargs[name] = tmp
        outs.append((orig, tmp))
    return tuple(cargs), ckwargs, outs


def _fill_outs(outs) -> None:
    for orig, tmp in outs:
        if orig.shape != tmp.shape:
            tensors.rebind(orig, tmp.shape, tmp.stride())
        tensors.cpu_alias(orig).copy_(tmp)


def _write_back(info: OverloadFacts, args, kwargs, cargs, ckwargs) -> None:
    """Copy fp16 temporaries of mutated fp32 arguments back into the device bytes."""
    out_positions = {pos for pos, _ in info.outs}
    for pos, name, _ in info.mutated:
        if pos in out_positions:
            continue
        if pos < len(args):
            orig, tmp = args[pos], cargs[pos]
        elif name in kwargs:
            orig, tmp = kwargs[name], ckwargs[name]
        else:
            continue
        if _is_dev(orig) and orig.dtype is torch.float32:
            tensors.cpu_alias(orig).copy_(tmp)


def _arg_for_alias(info: OverloadFacts, alias: frozenset, args, kwargs) -> Any:
    for pos, name, aset in info.mutated:
        if aset == alias:
            return args[pos] if pos < len(args) else kwargs.get(name)
    return None


def _wrap_results(info, op, result, args, kwargs, out_device, upcast, fault):
    single = len(info.returns) == 1
    results = [result] if single else list(result) if isinstance(result, (tuple, list)) else [result]
    cpu_outputs: list[torch.Tensor] = []
    wrapped = []
    for (kind, alias), value in zip(info.returns, results, strict=False):
        if kind is ReturnKind.WRITE:
            orig = _arg_for_alias(info, alias, args, kwargs)
            if fault is not None and _is_dev(orig):
                cpu_outputs.append(tensors.cpu_alias(orig))
            wrapped.append(orig if orig is not None else value)
        elif kind is ReturnKind.VIEW:
            base = _view_base(op, alias, args, kwargs)
            wrapped.append(_as_device_view(info, value, base, out_device))
        else:
            if fault is not None:
                _collect(value, cpu_outputs)
            wrapped.append(value)
    if fault is not None:
        faults.after_op(fault, cpu_outputs)
    final = []
    for (kind, _), value in zip(info.returns, wrapped, strict=False):
        if kind is ReturnKind.FRESH:
            value = _fresh_to_device(info, value, out_device, upcast)
        final.append(value)
    if single:
        return final[0]
    return type(result)(final) if isinstance(result, (tuple, list)) else tuple(final)


def _collect(value: Any, out: list) -> None:
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect(v, out)


def _fresh_to_device(info: OverloadFacts, value: Any, out_device, upcast: bool) -> Any:
    if isinstance(value, torch.Tensor):
        if out_device is None or value.device.type == DEVICE_TYPE:
            return value
        if upcast and value.dtype is torch.float16:
            value = value.to(torch.float32)
        _check_dtype(info, value.dtype)
        return tensors.to_device(value, out_device)
    if isinstance(value, (list, tuple)):
        return type(value)(_fresh_to_device(info, v, out_device, upcast) for v in value)
    return value


def _view_base(op, alias: frozenset, args, kwargs) -> torch.Tensor | None:
    schema = op._schema
    for i, arg in enumerate(schema.arguments):
        a = arg.alias_info
        if a is not None and frozenset(a.before_set) == alias:
            value = args[i] if i < len(args) else kwargs.get(arg.name)
            if isinstance(value, (list, tuple)):
                value = next((v for v in value if _is_dev(v)), None)
            return value if _is_dev(value) else None
    return None


def _as_device_view(info: OverloadFacts, value: Any, base: torch.Tensor | None, out_device) -> Any:
    if isinstance(value, (list, tuple)):
        return type(value)(_as_device_view(info, v, base, out_device) for v in value)
    if not isinstance(value, torch.Tensor):
        return value
    if base is None:
        return _fresh_to_device(info, value, out_device, False)
    storage = base.untyped_storage()
    if value.untyped_storage().data_ptr() != storage.data_ptr():
        # The CPU kernel materialised a copy (or a 0-byte storage): keep the bytes, lose aliasing.
        return tensors.to_device(value, base.device)
    view = tensors.device_view(storage, value.storage_offset(), value.size(), value.stride(), value.dtype)
    if value.is_neg():
        torch._C._set_neg(view, True)
    return view


# --- ops that cannot run as "the same op on CPU memory" ---------------------------------------


def _empty_memory_format(info, op, args, kwargs):
    size = args[0]
    dtype = kwargs.get("dtype") or torch.get_default_dtype()
    _check_dtype(info, dtype)
    mf = kwargs.get("memory_format")
    stride = None
    if mf is not None and mf is not torch.contiguous_format and mf is not torch.preserve_format:
        stride = torch.empty(size, dtype=dtype, device="meta", memory_format=mf).stride()
    return tensors.empty_device(size, stride, dtype, torch.device(kwargs.get("device") or DEVICE_TYPE))


def _empty_strided(info, op, args, kwargs):
    size, stride = args[0], args[1]
    dtype = kwargs.get("dtype") or torch.get_default_dtype()
    _check_dtype(info, dtype)
    return tensors.empty_device(size, stride, dtype, torch.device(kwargs.get("device") or DEVICE_TYPE))


def _copy_from(info, op, args, kwargs):
    src, dst = args[0], args[1]
    if _is_dev(dst):
        _check_dtype(info, dst.dtype)
    csrc = tensors.cpu_alias(src) if _is_dev(src) else src
    cdst = tensors.cpu_alias(dst) if _is_dev(dst) else dst
    if op is torch.ops.aten._copy_from_and_resize.default and cdst.shape != csrc.shape:
        if _is_dev(dst):
            raise _unsupported_resize(info)
        cdst.resize_(csrc.shape)
    cdst.copy_(csrc)
    return dst


def _unsupported_resize(info):
    why = "would need aten::resize_, which Spyre lacks"
    return SpyreUnsupportedOpError(f"spyre: {info.full} {why}", aten_op=info.full, reason=why)


def _redispatch_cpu(info, op, args, kwargs):
    return op.redispatch(torch._C.DispatchKeySet(torch._C.DispatchKey.CPU), *args, **kwargs)


_SPECIAL = {
    "aten::empty.memory_format": _empty_memory_format,
    "aten::empty_strided": _empty_strided,
    "aten::_copy_from": _copy_from,
    "aten::_copy_from_and_resize": _copy_from,
    "aten::set_.source_Storage_storage_offset": _redispatch_cpu,
    "aten::set_.source_Storage": _redispatch_cpu,
    "aten::set_.source_Tensor": _redispatch_cpu,
    "aten::set_": _redispatch_cpu,
}
