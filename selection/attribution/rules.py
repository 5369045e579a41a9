"""Attribute changed upstream files and symbols to the aten ops and OpInfo entries they affect.

Rules, in order, for one ``ChangedFile``:

* ``torch/include/ATen/ops/<op>[_native|_ops|..._dispatch].h`` — the generated per-op headers in
  a wheel — name the aten op exactly (``_softmax_native.h`` → ``aten::_softmax``).
* ``aten/src/ATen/native/native_functions.yaml`` with a patch: every ``func:`` line in the hunks.
* Python files of the op stack (``torch/_refs``, ``torch/_decomp``, ``torch/_prims``,
  ``torch/_meta_registrations.py``, ``torch/nn/functional.py``, ``torch/functional.py``,
  ``torch/_tensor.py``): a changed top-level symbol maps to the ops the source map read for it
  (``@register_meta(aten.take.default)`` on ``meta_take`` → ``aten::take``; see
  ``selection.attribution.source_map``), and — always, because a wheel diff carries only names — to aten ops
  and OpInfo names with the same *key* (lower case, ``meta_``/``_`` prefixes and overloads
  stripped: ``_softmax`` and ``softmax`` share the key ``softmax``).
* OpInfo definitions (``common_methods_invocations.py``, ``opinfo/definitions/``): a symbol ``op_db[name]``
  names a changed OpInfo entry; a changed sample-input / reference-input / error-input generator
  names every OpInfo that uses it.
* Native sources (``aten/src/ATen/native/**.cpp``): the ops whose kernels the file defines,
  when the source map was built from a source tree; else the file stem's key matched as a
  substring of kernel names from ``native_functions.yaml`` and of aten op keys
  (``SoftMax.cpp`` → ``softmax_cpu_out`` → ``aten::_softmax``, …); else a short table of the
  big shared kernel files (``NATIVE_FAMILIES``: ``BinaryOps.cpp`` → add, sub, mul, div, …).

* Any other Python file of ``torch/nn`` or the op stack (``import_graph.SCANNED``) that defines
  no module or op of its own (``torch/nn/modules/linear_cross_entropy.py``: private helpers) is attributed through who
  imports it (``selection.attribution.import_graph``): the importers' definitions that use it are
  attributed as if they had changed (``torch/nn/functional.py:linear_cross_entropy``), the
  union is the file's impact, and ``Impact.via`` names them; importers two hops away count too.

A file that none of these can attribute is returned as unattributed; the memory stage decides
what that means.  Compiled binaries and the headers shipped with them (``torch/include`` apart
from the per-op headers) are *opaque*: a wheel-to-wheel diff always changes them, and the
per-op headers and Python symbols of the same diff carry the attributable signal.  Other
unattributable sources fail soft and keep their area.

``Impact``, ``OpCatalog`` and the name keys live in ``selection.attribution.catalog`` (re-exported here).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from selection.attribution.catalog import (
    FUNCTIONAL_PY,
    Impact,
    OpCatalog,
    aten_key,
    functional_key,
    method_keys,
    opinfo_key,
    symbol_key,
)
from selection.attribution.import_graph import SCANNED
from selection.attribution.native import is_helper, patch_names, patch_ops
from selection.attribution.patch_symbols import symbols_from_patch
from selection.models import ChangedFile

OP_HEADER = re.compile(r"^torch/include/ATen/ops/(?P<op>[A-Za-z0-9_]+?)"
                       r"(?:_native|_ops|_meta|_compositeimplicitautograd_dispatch|"
                       r"_compositeexplicitautograd_dispatch|"
                       r"_compositeexplicitautogradnonfunctional_dispatch|_cpu_dispatch|"
                       r"_cuda_dispatch|_meta_dispatch|_mps_dispatch)?\.h$")
FUNC_LINE = re.compile(r"^[+-]\s*-\s*func:\s*(?P<name>[A-Za-z0-9_]+)")
OPDB_SYMBOL = re.compile(r"^op_db\[(?P<name>[^\]]+)\]$")
BINARY_SUFFIXES = (".so", ".a", ".dylib", ".dll", ".pyd", ".lib")
OP_STACK_PY = ("torch/_refs/", "torch/_decomp/", "torch/_prims/", "torch/_prims_common/",
               "torch/_meta_registrations.py", "torch/nn/functional.py", "torch/functional.py",
               "torch/_tensor.py")
OPINFO_PY = ("torch/testing/_internal/common_methods_invocations.py",
             "torch/testing/_internal/opinfo/definitions/")
GENERATOR_PREFIXES = ("sample_inputs_", "reference_inputs_", "error_inputs_")
NATIVE_PREFIX = "aten/src/ATen/"
MODULES_PY = "torch/nn/modules/"
CPP_SUFFIXES = (".cpp", ".h", ".cc", ".hpp")
__all__ = ["Impact", "OpCatalog", "aten_key", "attribute", "attribute_all", "functional_key", "method_keys",
           "opinfo_key", "symbol_key"]


def _symbol_impact(f: ChangedFile, catalog: OpCatalog) -> Impact:
    """Changed symbols of an op-stack Python file → ops and OpInfos (module docstring); in
    ``torch/nn/functional.py`` also the modules whose functional form a symbol is (``layer_norm``
    → ``nn.LayerNorm``)."""
    sm = catalog.source_map
    if f.symbols is None and sm is not None and sm.symbols.get(f.filename):
        return _whole_python_file(f, catalog)
    modules: set[str] = set()
    aten: set[str] = set()
    infos: set[str] = set()
    reasons: list[str] = []
    for sym in f.symbols or ():
        key = symbol_key(sym)
        read = sm.symbol_ops(f.filename, sym) if sm is not None else []
        hits = catalog.indexed(read) | catalog.aten_by_key(key)
        named = catalog.opinfo_by_key(key)
        for mkey in method_keys(sym):  # ``Tensor.__rsub__`` → rsub, sub
            hits |= catalog.aten_by_key(mkey)
            named |= catalog.opinfo_by_key(mkey)
        mods = (catalog.modules_by_key(key) | catalog.modules_calling(sym.split('.')[0])
                if f.filename == FUNCTIONAL_PY else set())
        if hits or named or mods:
            aten |= hits
            infos |= named
            modules |= mods
            target = ", ".join(sorted(hits) or sorted(named)) + (f"; modules {', '.join(sorted(mods))}" if mods else "")
            via = f" (registers {', '.join(read)})" if read else ""
            reasons.append(f"{f.filename}:{sym}{via} → {target}")
    # Symbols known but matching none of our ops: helpers or ops outside the specs; attributed
    # (to nothing).  Symbols unknown (not computed, unparsable file): not attributed.
    return Impact(f.filename, frozenset(aten), frozenset(infos), tuple(reasons),
                  attributed=f.symbols is not None, modules=frozenset(modules))


def _whole_python_file(f: ChangedFile, catalog: OpCatalog) -> Impact:
    """An op-stack Python file changed as a whole (a push lists names only, no patch, no
    symbols): the OpInfos of every op it registers or calls (source map), as a broad impact —
    a cross-section of each (``selection.stages.memory``), not every test calling the ops: a Python
    reference or decomposition runs in the tests of its own op, not inside other ops' kernels.
    ``torch/nn/functional.py`` also reaches every module calling one of its functions."""
    sm = catalog.source_map
    symbols = sm.symbols[f.filename] if sm is not None else {}
    read = {op for ops in symbols.values() for op in ops}
    infos = catalog.variants(catalog.indexed(read) | read)
    modules: set[str] = set()
    if f.filename == FUNCTIONAL_PY:  # modules call nn.functional: every module calling one of its functions
        for fn in symbols:
            modules |= catalog.modules_calling(fn)
    reason = (f"{f.filename}: whole file without a patch → the OpInfos of the {len(read)} ops it registers "
              f"({len(infos)} tested)" + (f" and {len(modules)} modules calling it" if modules else ""))
    return Impact(f.filename, opinfos=frozenset(infos), reasons=(reason,), why={s: reason for s in infos},
                  broad=True, modules=frozenset(modules))


def _opinfo_impact(f: ChangedFile, catalog: OpCatalog) -> Impact:
    why: dict[str, str] = {}
    reasons: list[str] = []
    for sym in f.symbols or ():
        m = OPDB_SYMBOL.match(sym)
        if m:
            name = m.group("name")
            hit = catalog.opinfo_named(name)
            if hit:
                reason = f"{f.filename}: OpInfo entry {name} changed (test definition)"
                reasons.append(reason)
                for subject in hit:
                    why.setdefault(subject, reason)
        elif sym.startswith(GENERATOR_PREFIXES) and sym in catalog.generators:
            users = catalog.generators[sym]
            reason = f"{f.filename}:{sym} (sample inputs) → {len(users)} OpInfos"
            reasons.append(reason)
            for subject in users:
                why.setdefault(subject, reason)
    # A definitions file whose changes name no entry or generator we know is still attributed:
    # its other symbols (imports, helpers of other ops) do not reach our items.
    return Impact(f.filename, frozenset(), frozenset(why), tuple(reasons),
                  attributed=f.symbols is not None, why=why, definition=True)


def attribute(f: ChangedFile, catalog: OpCatalog, commit: str | None = None) -> Impact:
    """The ``Impact`` of one changed file; see the module docstring for the rules.

    A Python file with a patch but no ``symbols`` gets its symbols from the patch's hunks.
    """
    impact = _attribute_own(f, catalog, commit)
    if impact.attributed or impact.opaque or impact.canary or not f.filename.endswith(".py"):
        return impact
    if not f.filename.startswith(SCANNED):  # ``torch/__init__.py``: imported everywhere, and no area
        return impact
    return _through_importers(f.filename, catalog, commit, seen=frozenset()) or impact


#: How far ``_through_importers`` follows importers of importers (each hop only when the
#: importer itself attributes nothing).
IMPORT_HOPS = 2


def _through_importers(name: str, catalog: OpCatalog, commit: str | None, *, seen: frozenset[str],
                       hops: int = IMPORT_HOPS) -> Impact | None:
    """The union of the impacts of the definitions that import ``name`` (as changed symbols of
    their files), or ``None`` when no importer is known or none of them is attributable."""
    sm = catalog.source_map
    users = sm.importers.get(name, {}) if sm is not None else {}
    parts: list[tuple[str, Impact]] = []
    for path, symbols in sorted(users.items()):
        if path in seen:
            continue
        imp = _attribute_own(ChangedFile(filename=path, symbols=list(symbols)), catalog, commit)
        if not imp.attributed and hops > 1:
            imp = _through_importers(path, catalog, commit, seen=seen | {name}, hops=hops - 1)
        if imp is not None and imp.attributed and not imp.opaque:
            parts.append((f"{path}:{', '.join(symbols)}", imp))
    if not parts:
        return None
    via = "; ".join(p for p, _ in parts)
    ops = frozenset().union(*(i.aten_ops for _, i in parts))
    infos = frozenset().union(*(i.opinfos for _, i in parts))
    modules = frozenset().union(*(i.modules for _, i in parts))
    why = {s: r for _, i in parts for s, r in i.why.items()}
    reason = (f"{name} defines no module or op of its own; attributed through who imports it ({via}) → "
              f"{len(ops)} aten ops, {len(infos)} OpInfos, modules {', '.join(sorted(modules)) or 'none'}")
    return Impact(name, ops, infos, reasons=(reason, *(r for _, i in parts for r in i.reasons)),
                  why={s: f"{reason}: {r}" for s, r in why.items()}, modules=modules, via=via)


def _attribute_own(f: ChangedFile, catalog: OpCatalog, commit: str | None = None) -> Impact:
    """``attribute`` by the file's own content only (no importers)."""
    name = f.filename
    if f.symbols is None and f.patch and name.endswith((".py", ".pyi")):
        f = f.model_copy(update={"symbols": symbols_from_patch(f.patch)})
    if name.endswith(BINARY_SUFFIXES) or ".so." in name:
        return Impact(name, attributed=False, opaque=True,
                      reasons=(f"{name}: compiled binary, not attributable",))
    if name.startswith("torch/include/") and not name.startswith("torch/include/ATen/ops/"):
        return Impact(name, attributed=False, opaque=True,
                      reasons=(f"{name}: header of the compiled library, not attributable",))
    m = OP_HEADER.match(name)
    if m:
        aten = f"aten::{m.group('op')}"
        return Impact(name, frozenset({aten}), reasons=(f"{name} → {aten}",))
    if name.endswith("native_functions.yaml") and f.patch:
        ops = {f"aten::{fm.group('name')}" for line in f.patch.splitlines()
               if (fm := FUNC_LINE.match(line))}
        return Impact(name, frozenset(ops), reasons=tuple(f"{name} → {o}" for o in sorted(ops)),
                      attributed=bool(ops))
    if name.startswith(OPINFO_PY) and name.endswith(".py"):
        return _opinfo_impact(f, catalog)
    if name.startswith(OP_STACK_PY) and name.endswith((".py", ".pyi")):
        return _symbol_impact(f, catalog)
    if name.startswith(MODULES_PY) and name.endswith(".py") and name.count("/") == 3:
        return _module_file_impact(f, catalog)
    if name.startswith(NATIVE_PREFIX) and name.endswith(CPP_SUFFIXES):
        return _native_impact(f, catalog, commit)
    return Impact(name, attributed=False)


def _module_file_impact(f: ChangedFile, catalog: OpCatalog) -> Impact:
    """``torch/nn/modules/<file>.py``: the ModuleInfos of the classes it defines (those its
    symbols name, else all) and of the classes built of them (``selection.attribution.module_graph``),
    plus the OpInfo tests of their functional forms."""
    sm = catalog.source_map
    classes = sm.module_classes.get(f.filename) if sm is not None else None
    if not classes:
        return Impact(f.filename, attributed=False)
    named = {sym.split(".")[0] for sym in f.symbols or ()}
    touched = named & set(classes)
    picked = sorted(touched or classes)
    modules = {f"nn.{c}" for c in picked} & catalog.modules
    # the modules built of (or subclassing) them; a private base such as ``_ConvNd`` counts too
    users = catalog.modules_built_of((touched | {n for n in named if n.startswith("_")}) or set(classes)) - modules
    infos: set[str] = set()
    for cls in picked:
        for key in functional_key(cls):
            hit = {s for s in catalog.opinfo_by_key(key) if catalog.opinfos[s].startswith("nn.functional.")}
            if hit:
                infos |= hit
                break
    which = "changed classes" if touched else "classes it defines"
    built = f"; modules built of them {', '.join(sorted(users))}" if users else ""
    reason = (f"{f.filename} ({which}: {', '.join(picked)}) → modules {', '.join(sorted(modules)) or 'none tested'}"
              f"{built}; functional {', '.join(sorted({catalog.opinfos[s] for s in infos})) or 'none'}")
    return Impact(f.filename, opinfos=frozenset(infos), modules=frozenset(modules | users), reasons=(reason,),
                  why={s: reason for s in infos})


def _native_impact(f: ChangedFile, catalog: OpCatalog, commit: str | None) -> Impact:
    """A C++ source of ATen: the kernels its patch touches (``selection.attribution.native``), else the
    file's kernels (``OpCatalog.native_ops``); neither: not attributable → canaries."""
    name = f.filename
    found: set[str] = set()
    how = ""
    if f.patch and catalog.kernel_names is not None:
        found, named = patch_ops(f.patch, catalog.kernel_names)
        how = "patch: " + "; ".join(named[:6]) + (f" (+{len(named) - 6} more)" if len(named) > 6 else "")
    broad = False
    if not found:
        found, how = catalog.native_ops(name, commit if f.status != "removed" else None)
        broad = "defines" not in how  # kernels read from the source are not a guess
        if f.patch:
            how = f"patch names no kernel; {how}"
    if not found:
        return Impact(name, attributed=False, canary=True, reasons=(
            f"{name}: not attributable to ops (no kernel in its patch or name); canaries",))
    ops = catalog.indexed(found)
    infos = catalog.variants(ops | found)  # ``aten::layer_norm`` (composite, never indexed) too
    modules = catalog.modules_through_functional(found | ops)
    via = f"; modules through nn.functional {', '.join(sorted(modules))}" if modules else ""
    reason = f"{name} ({how}) → {', '.join(sorted(ops)) or 'no tested op'}{via}"
    helpers = [n for n in patch_names(f.patch) if is_helper(n, catalog.kernel_names)] \
        if f.patch and catalog.kernel_names is not None and not broad else []
    return Impact(name, frozenset(ops), frozenset(infos), reasons=(reason,),
                  why={s: reason for s in infos}, broad=broad, modules=frozenset(modules),
                  companions=_helper_file(f, catalog, commit, helpers))


def _helper_file(f: ChangedFile, catalog: OpCatalog, commit: str | None, helpers: list[str]) -> tuple[Impact, ...]:
    """For a patch that changes helpers (``selection.attribution.native.is_helper``): the file's ops as a
    whole-file change (``OpCatalog.native_ops``), since which of its kernels call the helpers is
    not in the patch; ``()`` without helpers or when the file's ops are unknown."""
    if not helpers:
        return ()
    found, how = catalog.native_ops(f.filename, commit if f.status != "removed" else None)
    if not found:
        return ()
    ops = catalog.indexed(found)
    infos = catalog.variants(ops | found)
    reason = (f"{f.filename}: helper {', '.join(helpers[:3])} changed; the kernels calling it are not in the "
              f"patch → the file's ops ({how}): {', '.join(sorted(ops)) or 'no tested op'}")
    return (Impact(f.filename, frozenset(ops), frozenset(infos), reasons=(reason,),
                   why={s: reason for s in infos}, broad="defines" not in how),)


def attribute_all(files: Iterable[ChangedFile], catalog: OpCatalog, commit: str | None = None) -> list[Impact]:
    """``attribute`` for every file, in input order, each followed by its companions (a changed
    helper's file); ``commit``: the change's head (for the kernels a native file defines there)."""
    return [imp for f in files for first in (attribute(f, catalog, commit),) for imp in (first, *first.companions)]
