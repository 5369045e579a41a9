"""Run the captured-input entries of torch-spyre's model-ops and module-tests configs.

A model-ops config (RFC-0186) lists, under one test (``TestSpyreModelOps::test_model_ops_db``
in torch-spyre's own ``tests/models/test_model_ops_v2.py``), every op call a model made with its
captured inputs (``edits.ops.include[].sample_inputs_func``); a module-tests config lists modules
(``edits.modules.include[]``: ``module_path``, ``constructor_inputs``, ``forward_inputs``) for
upstream's ``TestModule::test_forward``.  The file those configs name interprets the entries, so
we do the same from the spec itself, wherever the file is:

- ``captured_items(spec) -> list[(SpecItem, entry)]``: one item per captured op entry
  (``<suite>::<Class>::<test>[<op name>#<k>]``, ``k`` the entry's position; dtype = its first
  tensor's) and one per module entry and dtype (``[<module name>-<dtype>]``; dtypes float32 and
  float16, the ModuleInfo dtypes torch-spyre registers such modules with, kept to
  ``global.supported_dtypes`` when given), mode and reason from the test entry (a YAML comment
  counts), ``force_xfail`` of the dtype applied, tolerance from the dtype's ``precision``;
- ``run_op(entry, device, seed, tol)``: builds the inputs once on the CPU (seeded:
  ``global.input_config.seed``), calls the op there and on ``device`` (inputs moved, strides
  kept) and compares (``template_kit.check_close``); the op name is a dotted callable
  (``torch.nn.functional.linear``, ``torch.Tensor.view``), torch-spyre's ``torch.getitem`` /
  ``torch.and_`` are ``operator``'s and ``torch.to`` / ``torch.new_ones`` are ``Tensor`` methods;
- ``run_module(entry, dtype, device, seed, tol)``: builds the module from ``module_path`` with
  ``constructor_inputs`` on the CPU in ``dtype``, a deep copy on ``device``, and compares both
  outputs for every ``forward_inputs`` call (floating inputs follow ``dtype``), under
  ``torch.no_grad()`` (torch-spyre runs module forward tests without autograd).

A module or op that cannot be imported (``transformers`` not installed) fails the item with
the import error: the config asked for it to pass.
"""

from __future__ import annotations

import copy
import operator
from typing import Any

from test_specs.format.captured import CallInputs, import_object
from test_specs.format.loader import Spec
from test_specs.format.precedence import effective_mode, effective_tolerance
from test_specs.format.schema import ModuleNamed, OpNamed
from test_specs.values.items import SpecItem

MODULE_DTYPES = ("float32", "float16")


def _first_dtype(inputs: CallInputs) -> str:
    ts = inputs.tensors()
    return next((t.dtype for t in ts if t.dtype in ("float16", "bfloat16", "float32", "float64")),
                ts[0].dtype if ts else "none")


def captured_items(spec: Spec) -> list[tuple[SpecItem, OpNamed | ModuleNamed]]:
    """See the module docstring; items sorted by id."""
    out: list[tuple[SpecItem, OpNamed | ModuleNamed]] = []
    g = spec.config.global_
    for fi, f in enumerate(spec.config.files):
        for ti, t in enumerate(f.tests):
            generic = next((n for n in t.names), "captured")
            ops = [(k, o) for k, o in enumerate(t.edits.ops.include) if o.sample_inputs_func is not None]
            mods = [(k, m) for k, m in enumerate(t.edits.modules.include) if m.module_path]
            for k, o in ops:
                out.append((_item(spec, fi, ti, generic, f"{o.name}#{k}", _first_dtype(o.sample_inputs_func),
                                  o.tags, op=o.name), o))
            gd = {d.name for d in g.supported_dtypes}
            for k, m in mods:
                for dtype in [d for d in MODULE_DTYPES if not gd or d in gd]:
                    out.append((_item(spec, fi, ti, generic, f"{m.name}-{dtype}", dtype, m.tags,
                                      module=m.module_path, k=k), m))
    return sorted(out, key=lambda p: p[0].id)


def _item(spec: Spec, fi: int, ti: int, generic: str, subject: str, dtype: str, tags: list[str], *,
          op: str | None = None, module: str | None = None, k: int = 0) -> SpecItem:
    t = spec.config.files[fi].tests[ti]
    gd = spec.config.global_.dtype(dtype) if dtype != "none" else None
    mode = effective_mode(t.mode, bool(gd and gd.force_xfail))
    reason = None if mode == "mandatory_success" else (
        t.reason or spec.test_reason(fi, ti) or (gd.reason if gd and t.mode != mode else None)
        or f"mode {mode} in {spec.path.name}")
    tol = effective_tolerance(dtype, gd.precision if gd else None) if dtype != "none" else None
    return SpecItem(id=f"{spec.suite}::{generic}[{subject}]", suite=spec.suite, template=generic,
                    upstream=f"{spec.config.files[fi].path}::{generic}", op=op, module=module, dtype=dtype,
                    mode=mode, reason=reason, issue=t.issue if mode != "mandatory_success" else None,
                    tags=list(dict.fromkeys([*t.tags, *tags])), tolerance=tol)


def resolve_callable(name: str) -> Any:
    """The callable a model-ops entry names (see the module docstring)."""
    import torch

    try:
        return import_object(name)
    except (ImportError, AttributeError):
        rest = name.removeprefix("torch.")
        for owner in (operator, torch.Tensor):
            if hasattr(owner, rest):
                return getattr(owner, rest)
        raise


def _on(device: str, tree: Any) -> Any:
    from test_specs.templates.kit import to_device_keeping_strides, tree_map_tensors

    return tree_map_tensors(tree, lambda t: to_device_keeping_strides(t, device))


def run_op(entry: OpNamed, device: str, seed: int | None, tol: Any) -> None:
    """Call the captured op on the CPU and on ``device``; raises ``TemplateFailure`` on a mismatch."""
    from test_specs.templates.kit import check_close, device_call, seed_cpu

    assert entry.sample_inputs_func is not None
    fn = resolve_callable(entry.name)
    dtype = _first_dtype(entry.sample_inputs_func)
    args, kwargs = entry.sample_inputs_func.build("cpu", seed)
    dargs, dkwargs = _on(device, args), _on(device, kwargs)
    seed_cpu()
    expected = fn(*args, **kwargs)
    seed_cpu()
    actual = device_call(lambda: fn(*dargs, **dkwargs), name=entry.name, dtype=dtype, sample=0)
    check_close(actual, expected, tol, name=entry.name, dtype=dtype, sample=0)


def run_module(entry: ModuleNamed, dtype: str, device: str, seed: int | None, tol: Any) -> None:
    """Forward the captured module on the CPU and on ``device`` for every ``forward_inputs``."""
    import torch

    from test_specs.templates.kit import check_close, device_call, tree_map_tensors

    assert entry.module_path is not None
    dt = getattr(torch, dtype)
    cls = import_object(entry.module_path)
    cargs, ckwargs = entry.constructor_inputs.build("cpu", seed)
    torch.manual_seed(0 if seed is None else seed)
    cpu_mod = cls(*cargs, **ckwargs).to(dt).eval()
    dev_mod = device_call(lambda: copy.deepcopy(cpu_mod).to(device), name=entry.name, dtype=dtype, sample=None)
    cast = lambda t: t.to(dt) if t.is_floating_point() else t  # noqa: E731
    for i, call in enumerate(entry.forward_inputs):
        args, kwargs = call.build("cpu", seed)
        args, kwargs = tree_map_tensors(args, cast), tree_map_tensors(kwargs, cast)
        with torch.no_grad():
            expected = cpu_mod(*args, **kwargs)
            actual = device_call(lambda a=args, k=kwargs: dev_mod(*_on(device, a), **_on(device, k)),
                                 name=entry.name, dtype=dtype, sample=i)
        check_close(actual, expected, tol, name=entry.name, dtype=dtype, sample=i)
