"""ModuleInfo templates: module forward and backward vs CPU, noncontiguous inputs.

``MODULE_TEMPLATES`` lists them for the registry (``test_specs.templates.registry``), all with
``builtin=False``, like most of ``op_templates``: a spec runs them where it lists them.

Each function has the template signature ``fn(module_info, dtype, device, tol) -> None`` with a
``ModuleInfo`` from ``torch.testing._internal.common_modules.module_db`` and mirrors one upstream
test of ``test/test_modules.py`` (named in its ``Template``):

- ``TestModule::test_forward``: for each ``ModuleInput`` (up to the sample cap) the module is
  built on the CPU (seeded, cast to ``dtype``, eval mode), deep-copied to the device, and the
  device forward output must equal the CPU forward output.  Upstream ``test_forward`` checks the
  device output against ``reference_fn`` when the input has one; here the CPU is the reference,
  as in ``test_cpu_gpu_parity``.
- ``TestModule::test_cpu_gpu_parity`` (the backward half): the gradients of ``sum(outputs)``
  w.r.t. the forward inputs that require grad and every parameter must equal the CPU's.
- ``TestModule::test_non_contiguous_tensors``: noncontiguous forward inputs give the contiguous
  result on the device.
- ``TestModule::test_multiple_device_transfer``: a module moved CPU → device → CPU → device keeps
  every parameter and buffer on the device it was last moved to, and its forward result after
  the round trip equals the first device result (so no state is lost in transfers).

Modules run in eval mode (``training=False``): training-mode dropout draws random numbers,
which the device cannot (design §7); upstream parametrizes both modes.  When the CPU itself has
no kernel for ``dtype`` (float16/bfloat16 on some CPU ops) the reference is computed in float32
and cast to ``dtype``.  ModuleInputs without a forward input are ignored (as upstream).
Raises ``TemplateFailure`` / ``TemplateSkip`` (see ``template_kit``).
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

from test_specs.templates.kit import (
    FLOATING,
    Template,
    TemplateFailure,
    TemplateSkip,
    capped,
    check_close,
    device_call,
    seed_cpu,
    to_device_keeping_strides,
)
from test_specs.values.items import Tolerance


def _inputs(mi: Any, dtype: torch.dtype, requires_grad: bool) -> list[Any]:
    made = mi.module_inputs_func(mi, device="cpu", dtype=dtype, requires_grad=requires_grad, training=False)
    return [m for m in capped(x for x in made if x.forward_input is not None)]


def _tmap(f: Any, tree: Any) -> Any:
    return tree_map(lambda t: f(t) if isinstance(t, torch.Tensor) else t, tree)


def _build(mi: Any, module_input: Any, dtype: torch.dtype) -> torch.nn.Module:
    c = module_input.constructor_input
    seed_cpu()
    m = mi.module_cls(*c.args, **c.kwargs)
    return m.to(dtype).train(False)


def _run(m: torch.nn.Module, fwd: Any, backward: bool) -> tuple[Any, list[Any]]:
    """Forward (and optionally backward) of ``m``; returns CPU copies of outputs and gradients."""
    args, kwargs = fwd
    out = m(*args, **kwargs)
    grads: list[Any] = []
    if backward:
        leaves = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
        wrt = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor) and t.requires_grad]
        wrt += [p for p in m.parameters() if p.requires_grad]
        if leaves and wrt:
            loss = sum((t.sum() for t in leaves[1:]), leaves[0].sum())
            grads = [g.detach().cpu() if g is not None else None
                     for g in torch.autograd.grad(loss, wrt, allow_unused=True)]
    return _tmap(lambda t: t.detach().cpu(), out), grads


def _move(fwd: Any, device: str, dtype: torch.dtype | None = None) -> Any:
    def mv(t: torch.Tensor) -> torch.Tensor:
        moved = t.detach().to(device)
        if dtype is not None and moved.is_floating_point():
            moved = moved.to(dtype)
        return moved.requires_grad_(t.requires_grad)

    return _tmap(mv, fwd)


def _reference(mi: Any, module_input: Any, fwd: Any, dtype: torch.dtype, backward: bool) -> tuple[Any, list[Any]]:
    """CPU result at ``dtype``, or in float32 cast back to ``dtype`` when the CPU lacks a kernel."""
    try:
        return _run(_build(mi, module_input, dtype), _move(fwd, "cpu"), backward)
    except Exception as e:  # noqa: BLE001 - CPU has no kernel at this dtype
        if dtype == torch.float32:
            first = str(e).splitlines()[0] if str(e) else ""
            raise TemplateSkip(f"CPU reference raises {type(e).__name__}: {first}") from None
        out, grads = _run(_build(mi, module_input, torch.float32), _move(fwd, "cpu", torch.float32), backward)
        cast = lambda t: t.to(dtype) if t.is_floating_point() else t  # noqa: E731
        return _tmap(cast, out), [cast(g) if g is not None else None for g in grads]


def _vs_cpu(mi: Any, dtype: torch.dtype, device: str, tol: Tolerance, backward: bool) -> None:
    name, dname = mi.name, str(dtype).removeprefix("torch.")
    for i, module_input in enumerate(_inputs(mi, dtype, requires_grad=backward)):
        fwd = (module_input.forward_input.args, module_input.forward_input.kwargs)
        expected = _reference(mi, module_input, fwd, dtype, backward)

        def run(module_input: Any = module_input, fwd: Any = fwd) -> tuple[Any, list[Any]]:
            m = copy.deepcopy(_build(mi, module_input, dtype)).to(device)
            return _run(m, _move(fwd, device), backward)

        actual = device_call(run, name=name, dtype=dname, sample=i)
        if backward:
            check_close(actual[1], expected[1], tol, name=name, dtype=dname, sample=i,
                        what="input/parameter gradients differ from CPU")
        else:
            check_close(actual[0], expected[0], tol, name=name, dtype=dname, sample=i)


def module_forward(mi: Any, dtype: torch.dtype, device: str, tol: Tolerance) -> None:
    """See the module docstring; mirrors ``TestModule::test_forward``."""
    _vs_cpu(mi, dtype, device, tol, backward=False)


def module_backward(mi: Any, dtype: torch.dtype, device: str, tol: Tolerance) -> None:
    """See the module docstring; mirrors ``TestModule::test_cpu_gpu_parity``."""
    _vs_cpu(mi, dtype, device, tol, backward=True)


def module_non_contiguous(mi: Any, dtype: torch.dtype, device: str, tol: Tolerance) -> None:
    """See the module docstring; mirrors ``TestModule::test_non_contiguous_tensors``."""
    from torch.testing._internal.common_utils import noncontiguous_like

    name, dname = mi.name, str(dtype).removeprefix("torch.")
    for i, module_input in enumerate(_inputs(mi, dtype, requires_grad=False)):
        fwd = (module_input.forward_input.args, module_input.forward_input.kwargs)

        def run(module_input: Any = module_input, fwd: Any = fwd) -> tuple[Any, Any]:
            m = copy.deepcopy(_build(mi, module_input, dtype)).to(device)
            contiguous = _run(m, _move(fwd, device), False)[0]
            noncontig = _tmap(lambda t: to_device_keeping_strides(noncontiguous_like(t.detach()), device), fwd)
            return _run(m, noncontig, False)[0], contiguous

        actual, expected = device_call(run, name=name, dtype=dname, sample=i)
        check_close(actual, expected, tol, name=name, dtype=dname, sample=i,
                    what="output on noncontiguous inputs differs from contiguous")


def module_device_transfer(mi: Any, dtype: torch.dtype, device: str, tol: Tolerance) -> None:
    """See the module docstring; mirrors ``TestModule::test_multiple_device_transfer``."""
    name, dname = mi.name, str(dtype).removeprefix("torch.")
    for i, module_input in enumerate(_inputs(mi, dtype, requires_grad=False)):
        fwd = (module_input.forward_input.args, module_input.forward_input.kwargs)

        def run(module_input: Any = module_input, fwd: Any = fwd) -> tuple[Any, Any, list[str]]:
            m = copy.deepcopy(_build(mi, module_input, dtype)).to(device)
            first = _run(m, _move(fwd, device), False)[0]
            m.to("cpu")
            wrong = [f"{n} on {t.device.type} after .to('cpu')" for n, t in
                     [*m.named_parameters(), *m.named_buffers()] if t.device.type != "cpu"]
            m.to(device)
            wrong += [f"{n} on {t.device.type} after .to({device!r})" for n, t in
                      [*m.named_parameters(), *m.named_buffers()] if t.device.type != device]
            return _run(m, _move(fwd, device), False)[0], first, wrong

        again, first, wrong = device_call(run, name=name, dtype=dname, sample=i)
        if wrong:
            raise TemplateFailure(op=name, dtype=dname, sample=i, message="; ".join(wrong[:3]))
        check_close(again, first, tol, name=name, dtype=dname, sample=i,
                    what="forward after CPU round trip differs from the first device forward")


_TEST_MODULES = "test/test_modules.py::TestModule::"

#: The ModuleInfo templates, for the registry in ``test_specs.templates.registry``.
MODULE_TEMPLATES: list[Template] = [
    Template(builtin=False, name="TestModule::test_forward", upstream=_TEST_MODULES + "test_forward",
             fn=module_forward, kind="module", allowed_dtypes=FLOATING,
             description="module forward on the device equals CPU"),
    Template(builtin=False, name="TestModule::test_cpu_gpu_parity", upstream=_TEST_MODULES + "test_cpu_gpu_parity",
             fn=module_backward, kind="module", allowed_dtypes=FLOATING,
             description="module input and parameter gradients on the device equal CPU"),
    Template(builtin=False, name="TestModule::test_non_contiguous_tensors",
             upstream=_TEST_MODULES + "test_non_contiguous_tensors", fn=module_non_contiguous, kind="module",
             allowed_dtypes=FLOATING, description="noncontiguous forward inputs give the contiguous result"),
    Template(builtin=False, name="TestModule::test_multiple_device_transfer",
             upstream=_TEST_MODULES + "test_multiple_device_transfer", fn=module_device_transfer,
             kind="module", allowed_dtypes=FLOATING,
             description="parameters follow .to(); forward survives a CPU round trip"),
]
