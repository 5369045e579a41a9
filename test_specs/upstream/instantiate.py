"""The spec's rules applied where upstream builds device tests: ``PrivateUse1TestBase.instantiate_test``.

``common_device_type.instantiate_device_type_tests`` calls the device base's
``instantiate_test(name, test, generic_cls=...)`` once per generic test; it adds one method per
variant (``test_x_<op>_spyre_<dtype>``).  torch-spyre's ``OOTTestBase.instantiate_test`` wraps
it, and so does ``install(book)`` (called by ``test_specs.upstream.tree`` in the test process, after
the device is registered and before any upstream test module is imported):

1. for an ``@ops`` test, the ``ops`` decorator's ``op_list`` is rewritten for this one call
   (then restored): kept to ``global.supported_ops`` when that list is given and shares an op
   with it (torch-spyre leaves the list alone when it would be empty), then the ops named in the
   entry's ``edits.ops.include`` are injected from ``op_db`` (RFC 1287: include adds the op to
   the test's ``@ops`` list), minus ``edits.ops.exclude``; ``allowed_dtypes`` gains the
   entry's ``edits.dtypes.include``;
   a ``@modules`` test's ``module_info_list`` likewise (``edited_module_list``);
2. after the original call, every new variant that ``FileRules.decide`` rejects (dtype or op
   filtered, mode ``skip``) is deleted from the class, so pytest never collects it — not built,
   not skipped (torch-spyre deletes them too).

Upstream files are matched to their rules by the generic class's module file
(``Rulebook.for_class``).  An OpInfo's name for the spec is ``name`` or ``name.variant``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from test_specs.upstream.rules import FileRules, parse_variant


class Rulebook:
    """``FileRules`` by resolved upstream file path."""

    def __init__(self, by_file: dict[Path, FileRules]) -> None:
        self.by_file = by_file

    def for_class(self, cls: type) -> FileRules | None:
        mod = sys.modules.get(cls.__module__)
        f = getattr(mod, "__file__", None)
        return self.by_file.get(Path(f).resolve()) if f else None

    def rules(self) -> Iterable[FileRules]:
        return self.by_file.values()


def op_name(opinfo: Any) -> str:
    """``name`` or ``name.variant`` of an OpInfo (the name specs use)."""
    v = getattr(opinfo, "variant_test_name", "")
    return opinfo.name + (f".{v}" if v else "")


def _ops_instance(test: Any) -> Any:
    from torch.testing._internal.common_device_type import ops

    p = getattr(getattr(test, "__func__", test), "parametrize_fn", None)
    inst = getattr(p, "__self__", None)
    return inst if isinstance(inst, ops) else None


def _op_db_by_name() -> dict[str, list[Any]]:
    from torch.testing._internal.common_methods_invocations import op_db

    out: dict[str, list[Any]] = {}
    for o in op_db:
        out.setdefault(o.name, []).append(o)
        out.setdefault(op_name(o), []).append(o) if getattr(o, "variant_test_name", "") else None
    return out


def edited_op_list(rules: FileRules, gcls: str, gtest: str, op_list: list[Any]) -> list[Any]:
    """The ``@ops`` list of ``gcls::gtest`` under the rules (step 1 of the module docstring)."""
    g = rules.spec.config.global_
    hit = rules.entry_for(gcls, gtest)
    edits = hit[2].edits.ops if hit else None
    out = list(op_list)
    if g.supported_ops is not None:
        names = {o.name for o in g.supported_ops}
        kept = [o for o in out if o.name in names or op_name(o) in names]
        out = kept or out
    if edits and edits.include:
        db, have = _op_db_by_name(), {id(o) for o in out}
        for inc in edits.include:
            for o in db.get(inc.name, []):
                if id(o) not in have and not (inc.exact and o.variant_test_name):
                    out.append(o)
                    have.add(id(o))
    if edits and edits.exclude:
        ex = {n.name for n in edits.exclude}
        out = [o for o in out if o.name not in ex and op_name(o) not in ex]
    return out


def _modules_instance(test: Any) -> Any:
    from torch.testing._internal.common_modules import modules

    p = getattr(getattr(test, "__func__", test), "parametrize_fn", None)
    inst = getattr(p, "__self__", None)
    return inst if isinstance(inst, modules) else None


def edited_module_list(rules: FileRules, gcls: str, gtest: str, module_list: list[Any]) -> list[Any]:
    """The ``@modules`` list of ``gcls::gtest``: kept to ``global.supported_modules`` (when it
    shares a module with it), then to the entry's ``edits.modules.include`` names when it lists
    any (torch-spyre registers ``module_path`` entries as new ModuleInfos; here those run as
    captured items, ``captured_run``, so an include of only such entries leaves no ModuleInfo),
    minus ``edits.modules.exclude``.  Names match ``nn.Linear`` or ``torch.nn.Linear``."""
    g = rules.spec.config.global_
    hit = rules.entry_for(gcls, gtest)
    edits = hit[2].edits.modules if hit else None
    named = lambda m, names: m.name in names or f"torch.{m.name}" in names  # noqa: E731
    out = list(module_list)
    if g.supported_modules is not None:
        names = {m.name for m in g.supported_modules}
        out = [m for m in out if named(m, names)] or out
    if edits and edits.include:
        out = [m for m in out if named(m, {n.name for n in edits.include})]
    if edits and edits.exclude:
        out = [m for m in out if not named(m, {n.name for n in edits.exclude})]
    return out


def install(book: Rulebook) -> None:
    """Wrap ``PrivateUse1TestBase.instantiate_test`` with the rules of ``book`` (idempotent)."""
    from torch.testing._internal.common_device_type import PrivateUse1TestBase

    original = PrivateUse1TestBase.instantiate_test.__func__  # a classmethod of DeviceTypeTestBase
    original = getattr(original, "__spyre_original__", original)

    def instantiate_test(cls: type, name: str, test: Any, *, generic_cls: type | None = None) -> None:
        rules = book.for_class(generic_cls) if generic_cls is not None else None
        if rules is None:
            return original(cls, name, test, generic_cls=generic_cls)
        gcls = generic_cls.__name__
        inst = _ops_instance(test)
        saved = (inst.op_list, inst.allowed_dtypes) if inst is not None else None
        mods = _modules_instance(test)
        saved_mods = mods.module_info_list if mods is not None else None
        before = set(vars(cls))
        try:
            if mods is not None:
                mods.module_info_list = edited_module_list(rules, gcls, name, mods.module_info_list)
            if inst is not None:
                inst.op_list = edited_op_list(rules, gcls, name, inst.op_list)
                hit = rules.entry_for(gcls, name)
                extra = {d.name for d in hit[2].edits.dtypes.include} if hit else set()
                if extra and inst.allowed_dtypes is not None:
                    import torch

                    inst.allowed_dtypes = set(inst.allowed_dtypes) | {getattr(torch, d) for d in extra}
            original(cls, name, test, generic_cls=generic_cls)
        finally:
            if inst is not None and saved is not None:
                inst.op_list, inst.allowed_dtypes = saved
            if mods is not None:
                mods.module_info_list = saved_mods
        _prune(cls, rules, gcls, set(vars(cls)) - before)

    instantiate_test.__spyre_original__ = original  # type: ignore[attr-defined]
    PrivateUse1TestBase.instantiate_test = classmethod(instantiate_test)  # type: ignore[assignment]


def _prune(cls: type, rules: FileRules, gcls: str, new: set[str]) -> None:
    for method in sorted(new):
        parsed = parse_variant(cls, method)
        if parsed is None:
            continue
        _, gtest, op, dtype = parsed
        if rules.decide(gcls, gtest, op, dtype, cls.__name__, method) is None:
            delattr(cls, method)
