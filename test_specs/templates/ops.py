"""OpInfo templates: ``test_compare_cpu``, noncontiguous inputs, ``out=``, variants, NumPy ref.

``OP_TEMPLATES`` lists them for the registry (``test_specs.templates.registry``).  Only
``TestCommon::test_compare_cpu`` is ``builtin``: a spec entry gets it even when unlisted.  The
others have ``builtin=False``: a spec runs them only where it lists them (so an existing spec's
``unlisted_test_mode`` does not grow new items when a template is added).

Each function has the template signature ``fn(op, dtype, device, tol) -> None`` (``op`` an
OpInfo, ``dtype`` a ``torch.dtype``, ``device`` e.g. ``"spyre"``, ``tol`` a ``Tolerance``) and
mirrors one upstream test of ``test/test_ops.py`` (named in its ``Template``):

- ``TestCommon::test_compare_cpu``: each sample on the CPU and on the device; outputs agree
  (see ``compare_cpu``).
- ``TestCommon::test_noncontiguous_samples``: the op on noncontiguous copies of each sample
  equals the op on the contiguous sample, forward and (for ops with autograd) the gradient of
  ``sum(outputs)`` w.r.t. the sample input.  Both runs are on the device.
- ``TestCommon::test_out``: for the first sample (as upstream), ``op(..., out=out)`` with
  ``out`` made by ``empty_like`` of the device result returns ``out`` itself and its values
  equal the CPU result.  Only ops with ``supports_out``.
- ``TestCommon::test_out_warning``: an ``out=`` tensor of the wrong (non-empty) shape is resized
  with PyTorch's "An output with one or more elements was resized" ``UserWarning``.  Only ops
  with ``supports_out``.
- ``TestCommon::test_variant_consistency_eager``: the method and inplace variants give the
  function variant's result on the device (forward; inplace skipped for samples that broadcast
  their input, as upstream).  Only ops with a method or inplace variant.

- ``TestCommon::test_numpy_ref``: the device output equals the op's NumPy reference
  (``op.ref``) on the same sample (``sample.numpy()``; bfloat16 goes to NumPy as float32), dtypes
  not compared (upstream ``compare_with_reference`` with ``exact_dtype=False``).  Upstream runs
  it in float64/int64 on the CPU; here it runs at the device dtypes.  Only ops with ``ref``.

Samples are built on the CPU (``op.sample_inputs("cpu", dtype)``) and moved: the device has no
random kernels (design §7), which is the spec's ``cpu_move`` policy for generated inputs.
Raises ``TemplateFailure`` / ``TemplateSkip`` (see ``template_kit``).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from test_specs.templates.kit import (
    FLOATING,
    Template,
    TemplateFailure,
    TemplateSkip,
    capped,
    check_close,
    device_call,
    mover,
    op_subject,
    seed_cpu,
    to_device_keeping_strides,
    tree_map_tensors,
)
from test_specs.values.items import Tolerance


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
    to_dev, to_cpu = mover(device), mover("cpu")
    for i, sample in enumerate(capped(op.sample_inputs("cpu", dtype))):
        dev_sample = sample.transform(to_dev)
        seed_cpu()
        expected = sample.output_process_fn_grad(op(sample.input, *sample.args, **sample.kwargs))

        def run(s: Any = dev_sample, post: Any = sample.output_process_fn_grad) -> Any:
            seed_cpu()
            return tree_map_tensors(post(op(s.input, *s.args, **s.kwargs)), to_cpu)

        actual = device_call(run, name=name, dtype=dname, sample=i)
        check_close(actual, expected, tol, name=name, dtype=dname, sample=i)


def _dev_sample(sample: Any, device: str) -> Any:
    return sample.transform(lambda t: to_device_keeping_strides(t, device) if isinstance(t, torch.Tensor) else t)


def _grad_inputs(sample: Any) -> list[torch.Tensor]:
    leaves, _ = tree_flatten((sample.input, sample.args, sample.kwargs))
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]


def _loss(out: Any) -> torch.Tensor | None:
    leaves = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.requires_grad
              and t.is_floating_point()]
    if not leaves:
        return None
    return sum((t.sum() for t in leaves), torch.zeros((), device=leaves[0].device, dtype=leaves[0].dtype))


def _forward_backward(op: Any, s: Any) -> tuple[Any, Any]:
    seed_cpu()
    out = s.output_process_fn_grad(op(s.input, *s.args, **s.kwargs))
    inputs, loss = _grad_inputs(s), _loss(out)
    grads = torch.autograd.grad(loss, inputs, allow_unused=True) if inputs and loss is not None else ()
    return tree_map_tensors(out, lambda t: t.detach().cpu()), [g.cpu() if g is not None else None for g in grads]


def noncontiguous_samples(op: Any, dtype: torch.dtype, device: str, tol: Tolerance) -> None:
    """See the module docstring; mirrors ``TestCommon::test_noncontiguous_samples``."""
    name, dname = op_subject(op), str(dtype).removeprefix("torch.")
    grad = bool(op.supports_autograd) and dtype in op.supported_backward_dtypes("cpu")
    for i, sample in enumerate(capped(op.sample_inputs("cpu", dtype, requires_grad=grad))):
        contiguous, noncontig = _dev_sample(sample, device), _dev_sample(sample.noncontiguous(), device)
        expected = device_call(lambda s=contiguous: _forward_backward(op, s), name=name, dtype=dname, sample=i)
        actual = device_call(lambda s=noncontig: _forward_backward(op, s), name=name, dtype=dname, sample=i)
        check_close(actual[0], expected[0], tol, name=name, dtype=dname, sample=i,
                    what="output on noncontiguous inputs differs from contiguous")
        check_close(actual[1], expected[1], tol, name=name, dtype=dname, sample=i,
                    what="gradient on noncontiguous inputs differs from contiguous")


def _is_tensor_or_tensors(x: Any) -> bool:
    return isinstance(x, torch.Tensor) or (isinstance(x, (tuple, list)) and bool(x)
                                            and all(isinstance(t, torch.Tensor) for t in x))


def _first_sample(op: Any, dtype: torch.dtype) -> Any:
    sample = next(iter(op.sample_inputs("cpu", dtype)), None)
    if sample is None:
        raise TemplateSkip("op has no sample inputs at this dtype")
    return sample


def out(op: Any, dtype: torch.dtype, device: str, tol: Tolerance) -> None:
    """See the module docstring; mirrors ``TestCommon::test_out`` (its "case 0": correct shape)."""
    name, dname = op_subject(op), str(dtype).removeprefix("torch.")
    sample = _first_sample(op, dtype)
    expected = op(sample.input, *sample.args, **sample.kwargs)
    if not _is_tensor_or_tensors(expected):
        raise TemplateSkip("output is not a tensor or a sequence of tensors (upstream test_out skips too)")
    dev = _dev_sample(sample, device)

    def run() -> tuple[Any, Any]:
        reference = op(dev.input, *dev.args, **dev.kwargs)
        buf = tree_map_tensors(reference, torch.empty_like)
        return buf, op(dev.input, *dev.args, out=buf, **dev.kwargs)

    buf, result = device_call(run, name=name, dtype=dname, sample=0)
    # a tuple result of another length is not ``out`` either (zip alone would compare a prefix)
    same = result is buf if isinstance(buf, torch.Tensor) else \
        len(result) == len(buf) and all(a is b for a, b in zip(result, buf, strict=True))
    if not same:
        raise TemplateFailure(op=name, dtype=dname, sample=0, message="op(..., out=out) did not return out")
    check_close(buf, expected, tol, name=name, dtype=dname, sample=0, what="out= result differs from CPU")


def out_warning(op: Any, dtype: torch.dtype, device: str, tol: Tolerance) -> None:
    """See the module docstring; mirrors ``TestCommon::test_out_warning``."""
    name, dname = op_subject(op), str(dtype).removeprefix("torch.")
    sample = _first_sample(op, dtype)
    expected = op(sample.input, *sample.args, **sample.kwargs)
    if not _is_tensor_or_tensors(expected) or any(t.numel() == 0 for t in tree_flatten(expected)[0]):
        raise TemplateSkip("output is not a non-empty tensor or sequence of tensors (upstream skips too)")
    dev = _dev_sample(sample, device)

    def run() -> list[warnings.WarningMessage]:
        wrong = tree_map_tensors(expected, lambda t: torch.empty(t.numel() + 1, dtype=t.dtype, device=device))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            op(dev.input, *dev.args, out=wrong, **dev.kwargs)
        return caught

    caught = device_call(run, name=name, dtype=dname, sample=0)
    if not any("resized" in str(w.message) for w in caught):
        raise TemplateFailure(op=name, dtype=dname, sample=0,
                              message="resizing a wrongly shaped out= tensor did not warn")


def variant_consistency_eager(op: Any, dtype: torch.dtype, device: str, tol: Tolerance) -> None:
    """See the module docstring; mirrors ``TestCommon::test_variant_consistency_eager``."""
    name, dname = op_subject(op), str(dtype).removeprefix("torch.")
    method, inplace = op.method_variant, op.inplace_variant
    for i, sample in enumerate(capped(op.sample_inputs("cpu", dtype))):
        dev = _dev_sample(sample, device)

        def call(fn: Any, inp: Any, d: Any = dev) -> Any:
            seed_cpu()
            return tree_map_tensors(fn(inp, *d.args, **d.kwargs), lambda t: t.cpu())

        expected = device_call(lambda d=dev: call(op, d.input), name=name, dtype=dname, sample=i)
        if method is not None:
            got = device_call(lambda d=dev: call(method, d.input), name=name, dtype=dname, sample=i)
            check_close(got, expected, tol, name=name, dtype=dname, sample=i,
                        what="method variant differs from function")
        if inplace is not None and not sample.broadcasts_input and isinstance(dev.input, torch.Tensor) \
                and isinstance(expected, torch.Tensor) and expected.dtype == dev.input.dtype:
            got = device_call(lambda d=dev: call(inplace, d.input.clone()), name=name, dtype=dname, sample=i)
            check_close(got, expected, tol, name=name, dtype=dname, sample=i,
                        what="inplace variant differs from function")


def numpy_ref(op: Any, dtype: torch.dtype, device: str, tol: Tolerance) -> None:
    """See the module docstring; mirrors ``TestCommon::test_numpy_ref``."""
    import numpy as np

    name, dname = op_subject(op), str(dtype).removeprefix("torch.")
    for i, sample in enumerate(capped(op.sample_inputs("cpu", dtype))):
        ns = sample.numpy()
        try:
            ref = op.ref(ns.input, *ns.args, **ns.kwargs)
        except Exception as e:  # noqa: BLE001 - the reference cannot take this sample
            raise TemplateSkip(f"NumPy reference raises {type(e).__name__} on sample {i}") from None
        expected = tree_map_tensors(ref, lambda t: t) if isinstance(ref, torch.Tensor) else \
            torch.utils._pytree.tree_map(
                lambda a: torch.from_numpy(np.asarray(a)) if isinstance(a, (np.ndarray, np.generic)) else a, ref)
        dev = _dev_sample(sample, device)
        actual = device_call(lambda d=dev: tree_map_tensors(op(d.input, *d.args, **d.kwargs), lambda t: t.cpu()),
                             name=name, dtype=dname, sample=i)
        actual = tree_map_tensors(actual, lambda t: t.to(torch.float64) if t.is_floating_point() else t)
        expected = tree_map_tensors(expected, lambda t: t.to(torch.float64) if t.is_floating_point() else t)
        if isinstance(actual, torch.Tensor) and isinstance(expected, (int, float, bool)):
            expected = torch.tensor(expected, dtype=actual.dtype)
        check_close(actual, expected, tol, name=name, dtype=dname, sample=i,
                    what="device output differs from the NumPy reference")


_TEST_OPS = "test/test_ops.py::TestCommon::"

#: The OpInfo templates, for the registry in ``test_specs.templates.registry``.
OP_TEMPLATES: list[Template] = [
    Template(name="TestCommon::test_compare_cpu", upstream=_TEST_OPS + "test_compare_cpu", fn=compare_cpu,
             allowed_dtypes=FLOATING, description="device output equals the CPU output for every sample input"),
    Template(builtin=False, name="TestCommon::test_noncontiguous_samples",
             upstream=_TEST_OPS + "test_noncontiguous_samples", fn=noncontiguous_samples, allowed_dtypes=FLOATING,
             description="noncontiguous inputs give the contiguous result (forward and gradient)"),
    Template(builtin=False, name="TestCommon::test_out", upstream=_TEST_OPS + "test_out", fn=out,
             allowed_dtypes=FLOATING, applies=lambda op: bool(op.supports_out),
             description="op(..., out=) returns out and equals CPU"),
    Template(builtin=False, name="TestCommon::test_out_warning", upstream=_TEST_OPS + "test_out_warning",
             fn=out_warning, allowed_dtypes=FLOATING, applies=lambda op: bool(op.supports_out),
             description="resizing a wrongly shaped out= tensor warns"),
    Template(builtin=False, name="TestCommon::test_variant_consistency_eager",
             upstream=_TEST_OPS + "test_variant_consistency_eager", fn=variant_consistency_eager,
             allowed_dtypes=FLOATING,
             applies=lambda op: op.method_variant is not None or op.inplace_variant is not None,
             description="method and inplace variants equal the function variant"),
    Template(builtin=False, name="TestCommon::test_numpy_ref", upstream=_TEST_OPS + "test_numpy_ref", fn=numpy_ref,
             allowed_dtypes=FLOATING, applies=lambda op: op.ref is not None,
             description="device output equals the op's NumPy reference"),
]
