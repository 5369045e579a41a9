"""Attribute changed upstream files and symbols to the aten ops and OpInfo entries they affect.

Rules, in order, for one ``ChangedFile``:

* ``torch/include/ATen/ops/<op>[_native|_ops|..._dispatch].h`` — the generated per-op headers in
  a wheel — name the aten op exactly (``_softmax_native.h`` → ``aten::_softmax``).
* ``aten/src/ATen/native/native_functions.yaml`` with a patch: every ``func:`` line in the hunks.
* Python files of the op stack (``torch/_refs``, ``torch/_decomp``, ``torch/_prims``,
  ``torch/_meta_registrations.py``, ``torch/nn/functional.py``, ``torch/functional.py``,
  ``torch/_tensor.py``): each changed top-level symbol matches aten ops and OpInfo names with the
  same *key* (lower case, ``meta_``/``_`` prefixes and overloads stripped: ``_softmax`` and
  ``softmax`` share the key ``softmax``).
* OpInfo definitions (``common_methods_invocations.py``, ``opinfo/definitions/``): a symbol ``op_db[name]``
  names a changed OpInfo entry; a changed sample-input / reference-input / error-input generator
  names every OpInfo that uses it.
* Native sources (``aten/src/ATen/native/**.cpp``): the file stem's key is matched as a
  substring of aten op keys (``SoftMax.cpp`` → ``_softmax``, ``_log_softmax``, …).

A file that none of these can attribute is returned as unattributed; the memory stage decides
what that means.  Compiled binaries and the headers shipped with them (``torch/include`` apart
from the per-op headers) are *opaque*: a wheel-to-wheel diff always changes them, and the
per-op headers and Python symbols of the same diff carry the attributable signal.  Other
unattributable sources fail soft and keep their area.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from selection.models import ChangedFile
from selection.patch_symbols import symbols_from_patch

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


def _strip(name: str) -> str:
    name = name.lower()
    if name.startswith("meta_"):
        name = name[5:]
    return name.strip("_")


def aten_key(aten_op: str) -> str:
    """Key of an aten op: ``aten::_softmax.int`` → ``softmax``."""
    return _strip(aten_op.split("::")[-1].split(".")[0])


def symbol_key(symbol: str) -> str:
    """Key of a changed top-level symbol: ``meta_addmm`` → ``addmm``; ``Cls.meth`` → ``cls``."""
    return _strip(symbol.split(".")[0])


def opinfo_key(name: str) -> str:
    """Key of an OpInfo name (no variant): ``nn.functional.gelu`` → ``gelu``."""
    return _strip(name.split(".")[-1])


@dataclass(frozen=True)
class Impact:
    """What one changed file affects: aten ops and/or OpInfo entries, with a reason each."""

    filename: str
    aten_ops: frozenset[str] = frozenset()
    opinfos: frozenset[str] = frozenset()
    reasons: tuple[str, ...] = ()
    attributed: bool = True
    opaque: bool = False


@dataclass
class OpCatalog:
    """What attribution knows about the universe: aten ops seen and OpInfo generators.

    ``aten_ops``: every aten op (``aten::name``) in the test → op index.  ``opinfos``:
    OpInfo subject (``name`` or ``name.variant``) → OpInfo name, for every item's op.  ``generators``:
    sample/reference/error input generator function name → OpInfo subjects using it.
    """

    aten_ops: frozenset[str]
    opinfos: Mapping[str, str]
    generators: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._aten: dict[str, set[str]] = {}
        for a in self.aten_ops:
            self._aten.setdefault(aten_key(a), set()).add(a)
        self._info: dict[str, set[str]] = {}
        for subject, name in self.opinfos.items():
            self._info.setdefault(opinfo_key(name), set()).add(subject)

    def aten_by_key(self, key: str) -> set[str]:
        """Aten ops whose key is ``key``."""
        return set(self._aten.get(key, ()))

    def opinfo_by_key(self, key: str) -> set[str]:
        """OpInfo subjects whose name's key is ``key``."""
        return set(self._info.get(key, ()))

    def opinfo_named(self, name: str) -> set[str]:
        """OpInfo subjects called ``name`` (any variant) or exactly ``name.variant``."""
        return {s for s, n in self.opinfos.items() if s == name or n == name}


def _symbol_impact(f: ChangedFile, catalog: OpCatalog) -> Impact:
    aten: set[str] = set()
    infos: set[str] = set()
    reasons: list[str] = []
    for sym in f.symbols or ():
        key = symbol_key(sym)
        hits = catalog.aten_by_key(key)
        named = catalog.opinfo_by_key(key)
        if hits or named:
            aten |= hits
            infos |= named
            target = ", ".join(sorted(hits) or sorted(named))
            reasons.append(f"{f.filename}:{sym} → {target}")
    # Symbols known but matching none of our ops: helpers or ops outside the specs; attributed
    # (to nothing).  Symbols unknown (not computed, unparsable file): not attributed.
    return Impact(f.filename, frozenset(aten), frozenset(infos), tuple(reasons),
                  attributed=f.symbols is not None)


def _opinfo_impact(f: ChangedFile, catalog: OpCatalog) -> Impact:
    infos: set[str] = set()
    reasons: list[str] = []
    for sym in f.symbols or ():
        m = OPDB_SYMBOL.match(sym)
        if m:
            name = m.group("name")
            hit = catalog.opinfo_named(name)
            if hit:
                infos |= hit
                reasons.append(f"{f.filename}: OpInfo entry {name} changed (test definition)")
        elif sym.startswith(GENERATOR_PREFIXES) and sym in catalog.generators:
            users = catalog.generators[sym]
            infos |= users
            reasons.append(f"{f.filename}:{sym} (sample inputs) → {len(users)} OpInfos")
    # A definitions file whose changes name no entry or generator we know is still attributed:
    # its other symbols (imports, helpers of other ops) do not reach our items.
    return Impact(f.filename, frozenset(), frozenset(infos), tuple(reasons),
                  attributed=f.symbols is not None)


def attribute(f: ChangedFile, catalog: OpCatalog) -> Impact:
    """The ``Impact`` of one changed file; see the module docstring for the rules.

    A Python file with a patch but no ``symbols`` gets its symbols from the patch's hunks.
    """
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
    if name.startswith("aten/src/ATen/native/") and name.endswith((".cpp", ".h", ".cc")):
        key = _strip(PurePosixPath(name).stem)
        ops = {a for a in catalog.aten_ops if key and key in aten_key(a)}
        return Impact(name, frozenset(ops), reasons=(f"{name} → {', '.join(sorted(ops))}",)
                      if ops else (), attributed=bool(ops))
    return Impact(name, attributed=False)


def attribute_all(files: Iterable[ChangedFile], catalog: OpCatalog) -> list[Impact]:
    """``attribute`` for every file, in input order."""
    return [attribute(f, catalog) for f in files]
