"""Repository memory, part 2: upstream source files and symbols → the aten ops they implement.

Built once per upstream version from a *root* that is either a PyTorch source tree or an
installed wheel (its ``site-packages``), and cached as JSON like the test → op index:

* ``native_functions.yaml`` (``aten/src/ATen/native/`` in a tree; ``torchgen/packaged/ATen/native/``
  in a wheel), read by PyTorch's own parser (``torchgen.model.NativeFunction.from_yaml``, the
  code generator's, shipped inside the torch wheel; tags checked against the ``tags.yaml`` beside
  the file, else the installed torchgen's): each function with the kernels of every dispatch key
  (``CPU: softmax_cpu_out`` → ``aten::_softmax``; ufunc kernels such as ``ufunc_add_CPU``), the
  implicit kernel name of a structured entry without a ``dispatch:`` block (``add_out`` for
  ``add.out``), and ``structured_delegate`` (``_softmax`` shares ``_softmax.out``'s kernels).
  About 1 s for the whole file (the regex reader it replaced: 0.1 s, and it missed the ufunc
  kernels); ``SourceMap.build`` caches the result per version.
* Python op-stack modules (``torch/_refs``, ``torch/_decomp``, ``torch/_meta_registrations.py``):
  by AST, a top-level function's ``@register_decomposition(aten.X)`` / ``@register_meta([aten.X.default,
  aten.Y])`` decorators name its ops exactly (overloads dropped).
* ``torch/nn/functional.py`` (and ``torch/functional.py``): by AST, the ``torch.X`` /
  ``torch._C._nn.X`` / ``input.X`` / ``_VF.X`` calls in a function body whose ``X`` is an aten op.
* Native sources, only when a source tree is given: ``aten/src/ATen/native/**.cpp`` → the kernels
  a file *defines* (``TORCH_IMPL_FUNC(k)``, ``TORCH_META_FUNC(op)``, a ``Tensor k(`` definition) →
  their ops.  A wheel has no native sources; attribution then falls back to file-stem matching
  against kernel names (``SoftMax.cpp`` → kernels containing ``softmax`` → ``aten::_softmax``).

* ``torch/nn/modules/<file>.py``: by AST, the classes each file defines (``linear.py`` →
  ``Linear``, ``Bilinear``, …), for the ModuleInfo items a module-file change selects.
* ``derivatives.yaml`` (``tools/autograd/`` in a tree, ``torchgen/packaged/autograd/`` in a
  wheel): backward op → the forward ops whose derivative formulas call it (``parse_derivatives``).

Shapes: ``symbols[path][symbol] = [aten ops]``, ``native_files[path] = [aten ops]``,
``kernels[kernel] = [aten ops]``, ``backward[backward op] = [forward ops]``,
``module_classes[path] = [class names]``, ``module_uses[class] = [classes it is built of]``,
``module_functional[class] = [nn.functional functions it calls]`` (``selection.attribution.module_graph``),
``importers[path][importer path] = [the importer's symbols using it]``
(``selection.attribution.import_graph``); aten ops are
schema names without overload (``aten::_softmax``).
A module that does not parse is skipped with a warning (its symbols fall back to name matching).
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from selection.attribution.import_graph import import_graph
from selection.attribution.module_graph import module_graph
from selection.index.cachefile import write_atomic

log = logging.getLogger(__name__)

YAML_PATHS = ("aten/src/ATen/native/native_functions.yaml",
              "torchgen/packaged/ATen/native/native_functions.yaml")
DERIVATIVES_PATHS = ("tools/autograd/derivatives.yaml", "torchgen/packaged/autograd/derivatives.yaml")
#: bumped when the cached shape changes (an older cache is then rebuilt, not misread)
CACHE_FORMAT = 5
DECORATED_PY = ("torch/_refs", "torch/_decomp", "torch/_meta_registrations.py", "torch/_prims")
CALLING_PY = ("torch/nn/functional.py", "torch/functional.py")
MODULES_PY = "torch/nn/modules"
REGISTER_DECORATORS = {"register_decomposition", "register_meta", "register_op_impl",
                       "_register_jit_decomposition_for_jvp", "register_lowering"}
CALL_ROOTS = {"torch", "_VF", "_nn", "input", "self", "a", "tensor", "_C"}
#: Tensor metadata queries: ``input.dim()`` says nothing about which kernel a function uses.
METADATA = {"aten::dim", "aten::size", "aten::stride", "aten::numel", "aten::is_contiguous",
            "aten::item", "aten::to", "aten::type_as", "aten::is_complex", "aten::is_floating_point"}

KERNEL_DEF = re.compile(r"TORCH_IMPL_FUNC\((?P<impl>\w+)\)|TORCH_META_FUNC2?\((?P<meta>\w+)"
                        r"|^(?:static\s+|inline\s+)*(?:at::)?(?:Tensor|std::tuple<[^>]*>|void)\s*&?"
                        r"\s+(?P<fn>\w+)\s*\(", re.M)


def parse_native_functions(text: str, tags_yaml: Path | None = None, *,
                           path: str = "native_functions.yaml") -> dict[str, list[str]]:
    """Kernel name → aten ops (sorted) from the text of ``native_functions.yaml``.

    Each entry is parsed by ``torchgen.model.NativeFunction.from_yaml`` with the tags of
    ``tags_yaml`` (default: the installed torchgen's packaged ``tags.yaml``).  Each op also counts
    as its own kernel name (``softmax`` → ``aten::softmax``) so a composite op's default kernel
    (named like the op) is found too.  An entry torchgen rejects (a file from a newer PyTorch
    than the installed torchgen) is skipped, and the count is logged as a warning; ``path``
    names the file in that warning.  Raises ``ValueError`` when the text is not YAML (callers
    such as ``selection.pipeline.load_source_map`` then fail soft).
    """
    import torchgen  # ships inside the torch wheel; imported here: ~0.3 s, needed once per version
    import yaml
    from torchgen.gen import LineLoader, parse_tags_yaml
    from torchgen.model import Location, NativeFunction

    if tags_yaml is None:
        tags_yaml = Path(torchgen.__file__).parent / "packaged/ATen/native/tags.yaml"
    valid_tags = parse_tags_yaml(str(tags_yaml))
    kernels: dict[str, set[str]] = {}
    delegates: dict[str, str] = {}
    rejected = 0
    try:
        entries = yaml.load(text, Loader=LineLoader) or []
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not YAML: {exc}") from exc
    for entry in entries:
        try:
            fn, backends = NativeFunction.from_yaml(entry, Location(path, entry["__line__"]), valid_tags)
        except Exception:  # noqa: BLE001 — torchgen asserts; one odd entry must not lose the file
            rejected += 1
            continue
        name = str(fn.func.name.name)
        op = f"aten::{name}"
        kernels.setdefault(name, set()).add(op)
        if fn.structured_delegate is not None:
            delegates[name] = str(fn.structured_delegate.name)
        if "dispatch" in entry or "ufunc_inner_loop" in entry:  # not the implicit composite kernel
            for by_op in backends.values():
                for meta in by_op.values():
                    kernels.setdefault(meta.kernel, set()).add(op)
        if fn.structured:  # ``TORCH_IMPL_FUNC(add_out)`` of ``add.out``, dispatch block or not
            overload = fn.func.name.overload_name
            kernels.setdefault(f"{name}_{overload}" if overload else name, set()).add(op)
    if rejected:
        log.warning("source map: torchgen rejected %d entries of %s (newer than the installed torch?)",
                    rejected, path)
    # ``_softmax`` delegates to ``_softmax.out``: the out kernels implement the functional op too.
    for op, target in delegates.items():
        for ops in kernels.values():
            if f"aten::{target}" in ops:
                ops.add(f"aten::{op}")
    return {k: sorted(v) for k, v in kernels.items()}


FORMULA_CALL = re.compile(r"\b(?P<name>[A-Za-z_]\w*)\s*\(")


def parse_derivatives(text: str, known: set[str], *, path: str = "derivatives.yaml") -> dict[str, list[str]]:
    """Backward op → forward ops (sorted) from the text of ``derivatives.yaml``: every call in an
    entry's formulas that names a known aten op with ``backward`` in its name (``_symint`` suffix
    dropped; the ``sum``/``mul`` a formula also uses are not backward kernels) is a backward of the
    entry's op (``_softmax``: ``self: _softmax_backward_data(...)`` → ``aten::_softmax_backward_data``
    → ``[aten::_softmax]``).  Raises ``ValueError`` when the text is not YAML."""
    import yaml

    try:
        entries = yaml.safe_load(text) or []
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not YAML: {exc}") from exc
    out: dict[str, set[str]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        fwd = f"aten::{entry['name'].split('(')[0].split('.')[0]}"
        for key, formula in entry.items():
            if key in ("name", "dispatch") or not isinstance(formula, str):
                continue
            for m in FORMULA_CALL.finditer(formula):
                op = f"aten::{m.group('name').removesuffix('_symint')}"
                if "backward" in op and op in known and op != fwd:
                    out.setdefault(op, set()).add(fwd)
    return {k: sorted(v) for k, v in out.items()}


def _aten_chain(node: ast.AST) -> str | None:
    """``aten.X`` / ``aten.X.default`` / ``torch.ops.aten.X.out`` → ``aten::X``; else ``None``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    parts.reverse()
    if "aten" not in parts:
        return None
    rest = parts[parts.index("aten") + 1:]
    return f"aten::{rest[0]}" if rest else None


def decorated_ops(tree: ast.Module) -> dict[str, list[str]]:
    """Top-level function → aten ops named by its registration decorators."""
    out: dict[str, set[str]] = {}
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in node.decorator_list:
            if not isinstance(dec, ast.Call):
                continue
            fname = dec.func.attr if isinstance(dec.func, ast.Attribute) else getattr(dec.func, "id", "")
            if fname not in REGISTER_DECORATORS:
                continue
            for arg in dec.args:
                elts = arg.elts if isinstance(arg, (ast.List, ast.Tuple, ast.Set)) else [arg]
                for e in elts:
                    if (op := _aten_chain(e)) is not None:
                        out.setdefault(node.name, set()).add(op)
    return {k: sorted(v) for k, v in out.items()}


def called_ops(tree: ast.Module, known: set[str]) -> dict[str, list[str]]:
    """Top-level name → aten ops it reaches as ``torch.X(...)``, ``input.X(...)``, ``_VF.X``.

    Functions are read by body, keeping only ops named like the function (``softmax`` →
    ``input.softmax`` → ``aten::softmax``; ``cross_entropy`` → ``aten::cross_entropy_loss``): the
    other ops a function merely *uses* (``gaussian_nll_loss`` calls ``torch.log``) are not changed
    by a change to it.  Module-level assignments such as ``gelu = _add_docstr(torch._C._nn.gelu, ...)``
    bind an op directly and keep every op in their value.
    """
    out: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = node.name
            key = name.strip("_").lower()
            attrs = [s.func for s in ast.walk(node)
                     if isinstance(s, ast.Call) and isinstance(s.func, ast.Attribute)
                     and (key in (k := s.func.attr.strip("_").lower()) or k in key)]
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            attrs = [s for s in ast.walk(node.value) if isinstance(s, ast.Attribute)]
        else:
            continue
        ops: set[str] = set()
        for attr in attrs:
            root = attr.value
            while isinstance(root, ast.Attribute):
                root = root.value
            op = f"aten::{attr.attr}"
            if isinstance(root, ast.Name) and root.id in CALL_ROOTS and op in known and op not in METADATA:
                ops.add(op)
        if ops:
            out[name] = sorted(ops)
    return out


def module_classes(root: Path) -> dict[str, list[str]]:
    """``torch/nn/modules/<file>.py`` → the classes it defines at top level (by AST), sorted;
    a file that does not parse is skipped with a warning."""
    out: dict[str, list[str]] = {}
    for path in sorted((root / MODULES_PY).glob("*.py")):
        rel = path.relative_to(root).as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError) as exc:
            log.warning("source map: skipping %s: %s", rel, exc)
            continue
        names = sorted(n.name for n in tree.body if isinstance(n, ast.ClassDef) and not n.name.startswith("_"))
        if names:
            out[rel] = names
    return out


def native_file_ops(text: str, kernels: dict[str, list[str]]) -> list[str]:
    """Aten ops whose kernels a native C++ source *defines* (see the module docstring)."""
    ops: set[str] = set()
    for m in KERNEL_DEF.finditer(text):
        if m.group("meta"):
            ops.add(f"aten::{m.group('meta')}")
        name = m.group("impl") or m.group("fn")
        if name and name in kernels:
            ops.update(kernels[name])
    return sorted(ops)


@dataclass
class SourceMap:
    """Upstream paths and symbols → aten ops (shapes in the module docstring)."""

    kernels: dict[str, list[str]] = field(default_factory=dict)
    symbols: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    native_files: dict[str, list[str]] = field(default_factory=dict)
    backward: dict[str, list[str]] = field(default_factory=dict)
    module_classes: dict[str, list[str]] = field(default_factory=dict)
    module_uses: dict[str, list[str]] = field(default_factory=dict)
    module_functional: dict[str, list[str]] = field(default_factory=dict)
    importers: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    @property
    def ops(self) -> set[str]:
        """Every aten op in ``native_functions.yaml``."""
        return {o for ops in self.kernels.values() for o in ops}

    def symbol_ops(self, path: str, symbol: str) -> list[str]:
        """Ops of ``symbol`` (``Cls.meth`` → ``Cls``) in ``path``; ``[]`` when unknown."""
        return self.symbols.get(path, {}).get(symbol.split(".")[0], [])

    def kernels_matching(self, key: str) -> set[str]:
        """Ops of every kernel whose lower-case name contains ``key`` (stem fallback)."""
        if not key:
            return set()
        return {o for k, ops in self.kernels.items() if key in k.lower() for o in ops}

    @classmethod
    def from_root(cls, root: Path) -> SourceMap:
        """Read a source tree or an installed wheel at ``root`` (see the module docstring).

        Raises ``FileNotFoundError`` if ``root`` holds no ``native_functions.yaml``.
        """
        yaml_path = next((root / p for p in YAML_PATHS if (root / p).is_file()), None)
        if yaml_path is None:
            raise FileNotFoundError(f"{root}: no native_functions.yaml (looked in {', '.join(YAML_PATHS)})")
        tags = yaml_path.parent / "tags.yaml"
        sm = cls(kernels=parse_native_functions(yaml_path.read_text(encoding="utf-8"),
                                                tags if tags.is_file() else None, path=str(yaml_path)))
        known = sm.ops
        deriv = next((root / p for p in DERIVATIVES_PATHS if (root / p).is_file()), None)
        if deriv is not None:
            sm.backward = parse_derivatives(deriv.read_text(encoding="utf-8"), known, path=str(deriv))
        for prefix in DECORATED_PY + CALLING_PY:
            base = root / prefix
            files = [base] if base.is_file() else sorted(base.rglob("*.py")) if base.is_dir() else []
            for path in files:
                rel = path.relative_to(root).as_posix()
                try:
                    tree = ast.parse(path.read_text(encoding="utf-8"))
                except (SyntaxError, UnicodeDecodeError, OSError) as exc:
                    log.warning("source map: skipping %s: %s", rel, exc)
                    continue
                found = called_ops(tree, known) if prefix in CALLING_PY else decorated_ops(tree)
                if found:
                    sm.symbols[rel] = found
        sm.module_classes = module_classes(root)
        sm.module_uses, sm.module_functional = module_graph(root)
        sm.importers = import_graph(root)
        native = root / "aten/src/ATen/native"
        if native.is_dir():
            for path in sorted(native.rglob("*.cpp")):
                ops = native_file_ops(path.read_text(encoding="utf-8", errors="replace"), sm.kernels)
                if ops:
                    sm.native_files[path.relative_to(root).as_posix()] = ops
        return sm

    @classmethod
    def build(cls, root: Path, *, version: str, cache_dir: Path | None) -> SourceMap:
        """``from_root`` once per (version, root), cached as ``source_map-v<CACHE_FORMAT>-<version>-<hash>.json``."""
        path = None
        if cache_dir is not None:
            tag = hashlib.sha1(str(Path(root).resolve()).encode()).hexdigest()[:8]
            path = Path(cache_dir) / f"source_map-v{CACHE_FORMAT}-{version}-{tag}.json"
            if path.exists():
                try:
                    return cls(**json.loads(path.read_text()))
                except (OSError, ValueError, TypeError) as exc:
                    log.warning("ignoring unreadable source map cache %s: %s", path, exc)
        sm = cls.from_root(Path(root))
        if path is not None:
            write_atomic(path, json.dumps({"kernels": sm.kernels, "symbols": sm.symbols,
                                           "native_files": sm.native_files, "backward": sm.backward,
                                           "module_classes": sm.module_classes,
                                           "module_uses": sm.module_uses,
                                           "module_functional": sm.module_functional,
                                           "importers": sm.importers},
                                          sort_keys=True))
        return sm


def installed_root() -> tuple[Path, str] | None:
    """(site-packages root, version) of the installed torch, or ``None`` if torch is absent."""
    from importlib.util import find_spec

    from selection.index.op_index import torch_version

    spec = find_spec("torch")  # located, not imported (importing torch takes seconds)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).resolve().parent.parent, torch_version()
