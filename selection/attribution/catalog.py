"""What attribution knows about the universe (``OpCatalog``), what one changed file affects
(``Impact``), and the name keys both match on (``aten_key``, ``opinfo_key``, …); the rules that
use them are ``selection.attribution.rules``."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from selection.attribution.module_graph import callers, dependents
from selection.attribution.native import KernelNames, NativeDefinitions, stem_ops
from selection.attribution.native_families import NATIVE_FAMILIES
from selection.attribution.source_map import SourceMap

FUNCTIONAL_PY = "torch/nn/functional.py"


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


def method_keys(symbol: str) -> list[str]:
    """Keys of a changed method ``Cls.meth`` (``Tensor.__rsub__`` → ``['rsub', 'sub']``: a
    reflected operator implements its base op too); ``[]`` for a top-level symbol."""
    if "." not in symbol:
        return []
    meth = symbol.rsplit(".", 1)[1]
    key = _strip(meth)
    keys = [key] if key else []
    if meth.startswith("__r") and meth.endswith("__") and len(key) > 1:
        keys.append(key[1:])
    return keys


def opinfo_key(name: str) -> str:
    """Key of an OpInfo name (no variant): ``nn.functional.gelu`` → ``gelu``."""
    return _strip(name.split(".")[-1])


@dataclass(frozen=True)
class Impact:
    """What one changed file affects: aten ops and/or OpInfo entries, with a reason each.

    ``definition``: the OpInfos are affected because their *test definition* changed (entry,
    sample inputs); otherwise because the implementation of the op they test changed.
    """

    filename: str
    aten_ops: frozenset[str] = frozenset()
    opinfos: frozenset[str] = frozenset()
    reasons: tuple[str, ...] = ()
    attributed: bool = True
    opaque: bool = False
    why: Mapping[str, str] = field(default_factory=dict)  # OpInfo subject → its own reason
    definition: bool = False
    canary: bool = False  # not attributable C++: the shared-machinery canaries, not the area
    modules: frozenset[str] = frozenset()  # ModuleInfo names (``nn.Linear``) whose module changed
    broad: bool = False  # a whole native file attributed by name or table (no patch, no checkout)
    companions: tuple[Impact, ...] = ()  # more impacts of the same file (a changed helper's file)
    via: str = ""  # attributed through its importers (``path:symbol, …``): said in every reason


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
    source_map: SourceMap | None = None
    definitions: NativeDefinitions | None = None
    modules: frozenset[str] = frozenset()  # ModuleInfo names in the universe

    def __post_init__(self) -> None:
        sm = self.source_map
        self.kernel_names = KernelNames(sm.kernels, sm.backward) if sm is not None else None
        self._modkeys: dict[str, set[str]] = {}
        for m in self.modules:
            for k in functional_key(m.split(".")[-1]):
                self._modkeys.setdefault(k.replace("_", ""), set()).add(m)
        self._aten: dict[str, set[str]] = {}
        for a in self.aten_ops:
            self._aten.setdefault(aten_key(a), set()).add(a)
        self._info: dict[str, set[str]] = {}
        for subject, name in self.opinfos.items():
            self._info.setdefault(opinfo_key(name), set()).add(subject)

    def modules_by_key(self, key: str) -> set[str]:
        """ModuleInfo names whose functional form has ``key`` (``layer_norm`` → ``nn.LayerNorm``;
        underscores ignored: ``silu`` → ``nn.SiLU``)."""
        return set(self._modkeys.get(key.replace("_", ""), ()))

    def modules_built_of(self, classes: Iterable[str]) -> set[str]:
        """ModuleInfo names of the module classes built of (containing or subclassing) one of
        ``classes``, transitively (``selection.attribution.module_graph``; ``Linear`` →
        ``nn.TransformerEncoderLayer``, ``Conv2d`` → ``nn.LazyConv2d``)."""
        uses = self.source_map.module_uses if self.source_map is not None else {}
        return {f"nn.{c}" for c in dependents(classes, uses)} & self.modules

    def modules_through_functional(self, ops: set[str]) -> set[str]:
        """ModuleInfo names of the modules calling an ``nn.functional`` function that calls one of
        ``ops`` (source map): composite ops such as ``aten::rms_norm`` decompose before dispatch,
        so no capture lists them, yet ``nn.RMSNorm`` runs them through ``F.rms_norm``."""
        called = self.source_map.symbols.get(FUNCTIONAL_PY, {}) if self.source_map is not None else {}
        out: set[str] = set()
        for fn, fn_ops in called.items():
            if ops.intersection(fn_ops):
                out |= self.modules_calling(fn)
        return out

    def modules_calling(self, function: str) -> set[str]:
        """ModuleInfo names of the classes whose body calls ``torch.nn.functional.<function>``,
        and of the classes built of those (``multi_head_attention_forward`` →
        ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``, …)."""
        if self.source_map is None:
            return set()
        direct = callers(function, self.source_map.module_functional)
        return ({f"nn.{c}" for c in direct} & self.modules) | self.modules_built_of(direct)

    def aten_by_key(self, key: str) -> set[str]:
        """Aten ops whose key is ``key``."""
        return set(self._aten.get(key, ()))

    def opinfo_by_key(self, key: str) -> set[str]:
        """OpInfo subjects whose name's key is ``key``."""
        return set(self._info.get(key, ()))

    def opinfo_named(self, name: str) -> set[str]:
        """OpInfo subjects called ``name`` (any variant) or exactly ``name.variant``."""
        return {s for s, n in self.opinfos.items() if s == name or n == name}

    def indexed(self, ops: Iterable[str]) -> set[str]:
        """The indexed aten ops standing for ``ops``: each op itself and the ops sharing its key.

        ``aten::softmax`` (composite, never reaches dispatch) stands for ``aten::_softmax``.
        """
        out: set[str] = set()
        for op in ops:
            if op in self.aten_ops:
                out.add(op)
            out |= self.aten_by_key(aten_key(op))
        return out

    def variants(self, ops: Iterable[str]) -> set[str]:
        """OpInfo subjects (every variant) whose name's key is an op's key: an impacted
        ``aten::div`` selects ``div.no_rounding_mode``, ``div.trunc_rounding``, …"""
        out: set[str] = set()
        for op in ops:
            out |= self.opinfo_by_key(aten_key(op))
        return out

    def native_ops(self, path: str, commit: str | None = None) -> tuple[set[str], str]:
        """(aten ops, how found) for a native source ``path`` without a patch, by the first rule
        that finds any: kernels the file defines at ``commit`` (upstream checkout), or in the
        source tree; else the file-stem rule (``selection.attribution.native.stem_ops``); else the aten op
        keys containing the stem's key."""
        sm = self.source_map
        if commit is not None and self.definitions is not None and sm is not None:
            defined = self.definitions.ops(commit, path, sm.kernels)
            if defined:
                return set(defined), f"kernels the file defines at {commit[:12]}"
        if sm is not None and path in sm.native_files:
            return set(sm.native_files[path]), "kernels defined in the file"
        if self.kernel_names is not None:
            found, how = stem_ops(path, self.kernel_names, NATIVE_FAMILIES)
            if found:
                return found, how
        key = re.sub(r"(kernels?|impl|utils?)$", "", _strip(PurePosixPath(path).stem).replace("_", ""))
        found = {a for a in self.aten_ops if len(key) >= 3 and key in aten_key(a).replace("_", "")}
        if key in NATIVE_FAMILIES:
            found |= {f"aten::{k}" for k in NATIVE_FAMILIES[key]}
            return found, "shared kernel file table"
        return found, "file name ~ tested op names"


def functional_key(cls: str) -> list[str]:
    """Keys of the functional form of module class ``cls``: ``LayerNorm`` → ``['layer_norm']``,
    ``BatchNorm2d`` → ``['batch_norm2d', 'batch_norm']``, ``Conv2d`` → ``['conv2d', 'conv']``."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls).lower()
    keys = [snake.strip("_")]
    bare = re.sub(r"_?\d+d$", "", keys[0])
    return keys + ([bare] if bare != keys[0] else [])
