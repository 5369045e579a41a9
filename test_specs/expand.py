"""Expand spec files into ``SpecItem``s: one per (template, OpInfo, dtype) of each ``source: op_db``.

``expand(spec_paths=None) -> list[SpecItem]`` (sorted by id, ids unique) — ``None`` means
``spec_paths_default()``.  ``path:`` file entries (upstream test files run by torch-spyre's own
framework) produce no items here.

Precedence rules (torch-spyre ``tests/oot_framework``, RFC 1287; design §6):

- ops of a test entry: ``edits.ops.include`` names (an OpInfo ``name`` selects all its variants,
  ``name.variant`` one) or, with no include list, all of ``op_db`` restricted to
  ``global.supported_ops`` when that is given; then minus ``edits.ops.exclude``.
- dtypes (``effective_dtypes``): ``global.supported_dtypes`` ∩ ``op.supported_dtypes('cpu')`` ∩
  the template's allowed dtypes ∩ the op's ``global.supported_ops[].dtypes`` (if listed),
  then ∪ ``edits.dtypes.include`` (limited to dtypes the op supports: samples cannot be made
  otherwise), then − ``edits.dtypes.exclude`` last.  An empty ``supported_dtypes`` means no filter.
- mode (``effective_mode``): the test's ``mode``; for a registered template no test lists,
  the file's ``unlisted_test_mode``.  ``force_xfail`` (on the op or the dtype) turns only
  ``mandatory_success`` into ``xfail``; skip/xfail/xfail_strict stay.
- tolerance (``effective_tolerance``): ``edits.dtypes.include[].precision`` >
  ``global.supported_ops[].dtypes[].precision`` > ``global.supported_dtypes[].precision`` >
  ``DEFAULT_TOLERANCE[dtype]``, field by field (an unset atol or rtol falls through).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from selection.models import Mode
from test_specs.items import SpecItem, Tolerance, make_item_id
from test_specs.loader import Spec, SpecError, load_spec
from test_specs.schema import Precision, TestEntry
from test_specs.templates import TEMPLATES, Template, load_extra_templates, op_subject

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
_EXACT = Tolerance(atol=0.0, rtol=0.0)  # integer and bool dtypes compare exactly


def spec_paths_default() -> list[Path]:
    """The spec files packaged in ``test_specs/specs/``, sorted by name."""
    root = Path(str(resources.files("test_specs") / "specs"))
    return sorted(root.glob("*.yaml"))


@functools.lru_cache(maxsize=1)
def op_db() -> tuple[Any, ...]:
    """``torch.testing._internal.common_methods_invocations.op_db`` (imported once, ~6 s)."""
    from torch.testing._internal.common_methods_invocations import op_db as db

    return tuple(db)


def dtype_names(dtypes: Iterable[Any]) -> set[str]:
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
    base = DEFAULT_TOLERANCE.get(dtype, _EXACT)
    atol = next((p.atol for p in precisions if p is not None and p.atol is not None), base.atol)
    rtol = next((p.rtol for p in precisions if p is not None and p.rtol is not None), base.rtol)
    return Tolerance(atol=atol, rtol=rtol)


def _matches(spec_name: str, op: Any) -> bool:
    return spec_name == op.name or spec_name == op_subject(op)


@dataclass
class _Ctx:
    spec: Spec
    items: dict[str, SpecItem]
    errors: list[SpecError]


def _select_ops(ctx: _Ctx, fi: int, ti: int, test: TestEntry) -> list[Any]:
    db, g = op_db(), ctx.spec.config.global_
    loc = ("files", fi, "tests", ti, "edits", "ops")
    for kind in ("include", "exclude"):
        for ni, n in enumerate(getattr(test.edits.ops, kind)):
            if not any(_matches(n.name, op) for op in db):
                ctx.errors.append(ctx.spec.error(loc + (kind, ni, "name"), f"unknown op {n.name!r}: not an OpInfo name (or name.variant) in op_db"))
    if test.edits.ops.include:
        ops = [op for op in db if any(_matches(n.name, op) for n in test.edits.ops.include)]
    elif g.supported_ops is not None:
        ops = [op for op in db if g.op(op.name, op.variant_test_name) is not None]
    else:
        ops = list(db)
    return [op for op in ops if not any(_matches(n.name, op) for n in test.edits.ops.exclude)]


def _add_items(ctx: _Ctx, fi: int, ti: int | None, template: Template, ops: list[Any],
               test: TestEntry | None) -> None:
    spec, g = ctx.spec, ctx.spec.config.global_
    fentry = spec.config.files[fi]
    edits = test.edits if test is not None else None
    include = {d.name: d for d in edits.dtypes.include} if edits else {}
    exclude = {d.name for d in edits.dtypes.exclude} if edits else set()
    gdtypes = {d.name for d in g.supported_dtypes}
    op_tags = {n.name: n.tags for n in edits.ops.include} if edits else {}
    for op in ops:
        subject, sop = op_subject(op), g.op(op.name, op.variant_test_name)
        dtypes = effective_dtypes(
            global_dtypes=gdtypes, op_dtypes=dtype_names(op.supported_dtypes("cpu")),
            allowed=set(template.allowed_dtypes) if template.allowed_dtypes is not None else None,
            op_restrict={d.name for d in sop.dtypes} if sop else None,
            include=set(include), exclude=exclude)
        for dtype in dtypes:
            gd = g.dtype(dtype)
            base: Mode = test.mode if test is not None else fentry.unlisted_test_mode
            reason = test.reason if test is not None else (fentry.reason or f"not listed in the spec (unlisted_test_mode: {base})")
            issue = test.issue if test is not None else fentry.issue
            forced = bool(sop and sop.force_xfail) or bool(gd and gd.force_xfail)
            mode = effective_mode(base, forced)
            if mode != base:  # force_xfail applied: its own reason/issue win
                src = sop if sop and sop.force_xfail else gd
                reason = src.reason or f"force_xfail in global config for {src.name!r}"
                issue = src.issue
            tol = effective_tolerance(dtype, include[dtype].precision if dtype in include else None,
                                      sop.precision(dtype) if sop else None, gd.precision if gd else None)
            item_id = make_item_id(spec.suite, template.name, subject, dtype)
            if item_id in ctx.items:
                loc = ("files", fi, "tests", ti, "names") if ti is not None else ("files", fi)
                ctx.errors.append(spec.error(loc, f"{template.name} for op {subject!r} is already produced by an earlier test entry"))
                continue
            tags = list(dict.fromkeys((test.tags if test else []) + [t for n, ts in op_tags.items() if _matches(n, op) for t in ts]))
            ctx.items[item_id] = SpecItem(
                id=item_id, suite=spec.suite, template=template.name, upstream=template.upstream,
                op=op.name, variant=op.variant_test_name or None, dtype=dtype, mode=mode,
                reason=reason if mode != "mandatory_success" else None,
                issue=issue if mode != "mandatory_success" else None, tags=tags, tolerance=tol)


def _expand_spec(spec: Spec) -> tuple[list[SpecItem], list[SpecError]]:
    load_extra_templates()
    ctx = _Ctx(spec, {}, [])
    for fi, f in enumerate(spec.config.files):
        if f.source is None:
            continue
        if f.source == "module_db":
            ctx.errors.append(spec.error(("files", fi, "source"), "source: module_db is not supported yet"))
            continue
        listed: set[str] = set()
        union: dict[int, Any] = {}
        for ti, t in enumerate(f.tests):
            ops = _select_ops(ctx, fi, ti, t)
            union.update((id(op), op) for op in ops)
            for ni, name in enumerate(t.names):
                tpl = TEMPLATES.get(name)
                if tpl is None or tpl.kind != "op":
                    known = sorted(n for n, x in TEMPLATES.items() if x.kind == "op")
                    ctx.errors.append(spec.error(("files", fi, "tests", ti, "names", ni), f"unknown op template {name!r}; known: {known}"))
                    continue
                listed.add(name)
                _add_items(ctx, fi, ti, tpl, ops, t)
        for name, tpl in sorted(TEMPLATES.items()):
            if tpl.builtin and tpl.kind == "op" and name not in listed:
                _add_items(ctx, fi, None, tpl, list(union.values()), None)
    return sorted(ctx.items.values(), key=lambda i: i.id), ctx.errors


def semantic_errors(spec: Spec) -> list[SpecError]:
    """Unknown templates/ops and duplicate items of ``spec`` (used by ``check_specs``)."""
    return _expand_spec(spec)[1]


def expand_spec(spec: Spec) -> list[SpecItem]:
    """Items of one loaded spec; raises ``ValueError`` listing the semantic errors, if any."""
    items, errors = _expand_spec(spec)
    if errors:
        raise ValueError("\n".join(e.format() for e in errors))
    return items


def expand(spec_paths: Iterable[str | Path] | None = None) -> list[SpecItem]:
    """All items of ``spec_paths`` (default: ``spec_paths_default()``), sorted by id.

    Raises ``loader.SpecLoadError`` for a file that does not load, ``ValueError`` for semantic
    errors or an id produced by two files (two files with the same stem).
    """
    paths = spec_paths_default() if spec_paths is None else [Path(p) for p in spec_paths]
    items: dict[str, SpecItem] = {}
    for p in paths:
        for it in expand_spec(load_spec(p)):
            if it.id in items:
                raise ValueError(f"{p}: item id {it.id} also produced by another spec file")
            items[it.id] = it
    return [items[k] for k in sorted(items)]
