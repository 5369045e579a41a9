"""Native C++ sources (``aten/src/ATen/native/**``) → the aten ops a change to them can break.

Data, not guesses, wherever the data exists (``selection.attribution.source_map`` reads it once per version):

* **Kernel names** from ``native_functions.yaml`` (torchgen): every dispatch kernel
  (``CPU: softmax_cpu_out`` → ``aten::_softmax``), structured ``TORCH_IMPL_FUNC`` names, ufunc
  kernels, and each op's own name.
* **Backward ops → forward ops** from ``derivatives.yaml``: a change to
  ``softmax_backward_cpu_out`` (``aten::_softmax_backward_data``) reaches the tests of
  ``aten::_softmax``, whose derivative formula calls it.

With a **patch**, ``patch_names`` reads, per hunk, the function each changed line sits in — the
hunk header (git's funcname context: ``@@ … @@ TORCH_IMPL_FUNC(softmax_cpu_out)``) or the nearest
definition line above it in the hunk — plus names the changed lines themselves define or call
as kernels: ``TORCH_IMPL_FUNC(k)``, ``TORCH_META_FUNC(op)``, ``DEFINE_DISPATCH(s)``,
``REGISTER_DISPATCH(s, &impl)``, and identifiers ending in ``_stub``/``_kernel``/``_impl``.
``KernelNames.resolve`` maps one name to ops: an exact kernel name; else the longest run of its
``_``-separated words that is a kernel or op name, preferring runs that start the name
(``addmm_impl_cpu_`` → ``addmm``; ``add_stub`` → ``add``; ``softmax_lastdim_kernel_impl`` →
``softmax``; ``host_softmax`` → ``softmax``); runs shorter than 3 characters never count.

**Without a patch** (``file_rule``): the ops whose kernels the file *defines* when an upstream
checkout is configured (``selection.attribution.source_map.native_file_ops`` over the file at the change's
head, cached per commit by ``NativeDefinitions``); else the documented file-stem rule: the
stem's CamelCase words minus generic ones (``GENERIC_WORDS``), each word's key matched against
kernel names, the most specific joining of all the words first (``SoftMax`` → ``softmax``,
``UpSampleNearest2d`` → ``upsample_nearest2d``, ``Embedding.cpp`` → ``embedding``,
``TensorAdvancedIndexing`` → ``index``), each word alone only when no joining matches, plus
``selection.attribution.native_families.NATIVE_FAMILIES`` for the shared kernel files whose
names say little (``BinaryOps.cpp``, ``TensorTransformations.cpp``).  A file none of these
attribute is *not attributable*: memory reports it and selects the shared-machinery canaries
(``selection.policy.canary``), never the whole universe.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath

from selection.index.cachefile import write_atomic

log = logging.getLogger(__name__)

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(?P<context>.*)$")
MACRO = re.compile(r"\b(?:TORCH_IMPL_FUNC|TORCH_META_FUNC2?|TORCH_PRECOMPUTE_META_FUNC2?|DEFINE_DISPATCH|"
                   r"REGISTER_DISPATCH|REGISTER_\w+_DISPATCH|ALSO_REGISTER_\w+_DISPATCH)\s*\(\s*(?P<a>\w+)"
                   r"(?:\s*,\s*&?\s*(?:\w+::)*(?P<b>\w+))?")
DECLARE = re.compile(r"\bDECLARE_DISPATCH\s*\([^,]+,\s*(?P<a>\w+)\s*\)")
#: a definition at column 0 (PyTorch's native sources do not indent inside namespaces):
#: ``Tensor& addmm_out(``, ``static void softmax_lastdim_kernel_impl(``, ``std::tuple<...> f(``
DEF = re.compile(r"^(?!\s)(?!(?:return|if|for|while|switch|else|namespace|using|case)\b)"
                 r"(?:[\w:<>,*&\s]+?[\s*&])(?P<name>[A-Za-z_]\w*)\s*\((?!.*;\s*$)")
CALLED = re.compile(r"\b(?P<name>[A-Za-z_]\w*_(?:stub|kernel|kernel_impl|impl|out|cpu|cpu_))\b")
#: Words of a native file's stem that name no op family.
GENERIC_WORDS = frozenset({"tensor", "tensors", "native", "ops", "op", "kernel", "kernels", "impl",
                           "utils", "util", "cpu", "functions", "function", "helper", "helpers",
                           "common", "advanced", "factory", "cpp", "h", "inl", "detail", "vec"})
#: Word → the key kernel names use for it (``AveragePool2d`` → ``avg_pool2d``).
WORD_KEYS = {"indexing": "index", "average": "avg", "maximum": "max", "minimum": "min",
             "activation": "activation"}
MIN_RUN = 3


def camel_words(stem: str) -> list[str]:
    """``TensorAdvancedIndexing`` → ``['tensor', 'advanced', 'indexing']``; ``layer_norm`` →
    ``['layer', 'norm']``; ``AveragePool2d`` → ``['average', 'pool2d']``."""
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*[a-z]*|[A-Z]+\d*[a-z]?|\d+[a-z]*", stem)
    return [w.lower() for w in words]


class KernelNames:
    """Kernel / op names → aten ops (``kernels`` as in ``SourceMap.kernels``), with
    ``backward`` (backward op → forward ops, from ``derivatives.yaml``)."""

    def __init__(self, kernels: Mapping[str, list[str]], backward: Mapping[str, list[str]] | None = None) -> None:
        self.kernels = kernels
        self.backward = backward or {}

    def _exact(self, name: str) -> set[str]:
        ops = self.kernels.get(name) or self.kernels.get(name.rstrip("_"))
        return set(ops) if ops else set()

    def resolve(self, name: str) -> set[str]:
        """The ops of one kernel-ish identifier (rules in the module docstring); ``set()`` if none."""
        found = self._exact(name)
        if found:
            return found
        words = [w for w in name.strip("_").split("_") if w]
        best: tuple[int, int] | None = None  # (length, -start) of the best run
        for i in range(len(words)):
            for j in range(len(words), i, -1):
                run = "_".join(words[i:j])
                if len(run) < MIN_RUN or not (self._exact(run) or self._exact("_" + run)):
                    continue
                key = (j - i, -i)
                if best is None or key > best:
                    best = key
                break
        if best is None:
            return set()
        i = -best[1]
        run = "_".join(words[i:i + best[0]])
        return self._exact(run) | self._exact("_" + run)

    def with_forward(self, ops: Iterable[str]) -> set[str]:
        """``ops`` plus the forward ops whose derivative formula calls one of them."""
        out = set(ops)
        for op in list(out):
            out.update(self.backward.get(op, ()))
        return out

    def matching(self, key: str) -> set[str]:
        """Ops of every kernel whose lower-case name contains ``key`` (the file-stem rule)."""
        if len(key) < MIN_RUN:
            return set()
        return {o for k, ops in self.kernels.items() if key in k.lower() for o in ops}


def patch_names(patch: str) -> list[str]:
    """Kernel-ish names a C++ patch touches (see the module docstring), in first-seen order."""
    found: dict[str, None] = {}
    current: str | None = None
    for line in patch.splitlines():
        m = HUNK.match(line)
        if m:
            current = _defined(m.group("context"))
            continue
        if not line or line[0] not in "+- ":
            continue
        body = line[1:]
        name = _defined(body)
        if name is not None:
            current = name
        if line[0] == " " or not body.strip():
            continue
        if current is not None:
            found.setdefault(current)
        for mm in MACRO.finditer(body):
            found.setdefault(mm.group("a"))
            if mm.group("b"):
                found.setdefault(mm.group("b"))
        for mm in DECLARE.finditer(body):
            found.setdefault(mm.group("a"))
        for mm in CALLED.finditer(body):
            found.setdefault(mm.group("name"))
    return list(found)


def _defined(line: str) -> str | None:
    """The function a line defines or opens (macro argument or definition name), else ``None``."""
    m = MACRO.search(line)
    if m and not line.startswith((" ", "\t")):
        return m.group("a")
    d = DEF.match(line)
    return d.group("name") if d else None


def patch_ops(patch: str, names: KernelNames) -> tuple[set[str], list[str]]:
    """(ops, ``name → ops`` reasons) for a C++ patch; empty when no touched name is a kernel."""
    ops: set[str] = set()
    reasons: list[str] = []
    for name in patch_names(patch):
        hit = names.resolve(name)
        if hit:
            full = names.with_forward(hit)
            ops |= full
            reasons.append(f"{name} → {', '.join(sorted(full))}")
    return ops, reasons


def is_helper(name: str, names: KernelNames) -> bool:
    """Whether a touched kernel-ish ``name`` is a helper: resolved by a run of its words, not a
    kernel itself nor a dispatch stub (``addmm_impl_cpu_``, ``div_floor_kernel``,
    ``layer_norm_with_mean_rstd_out``).  Which other kernels of the file call a helper is not in
    the patch (``mm_out_cpu`` calls ``addmm_impl_cpu_``; ``floor_divide`` reaches
    ``div_floor_kernel`` through ``div_floor_stub``)."""
    return not names._exact(name) and not name.endswith("_stub") and bool(names.resolve(name))


def stem_ops(path: str, names: KernelNames, families: Mapping[str, tuple[str, ...]]) -> tuple[set[str], str]:
    """(ops, rule) of the file-stem rule for ``path`` (module docstring); ``set()`` if none.

    The shared-file table wins when it lists the file; else the stem's words joined
    (``avg_pool2d``, ``layer_norm``), else each word alone (``index``)."""
    stem = PurePosixPath(path).stem
    whole = re.sub(r"(kernels?|impl|utils?)$", "", stem.lower().replace("_", ""))
    if whole in families:
        return names.with_forward({f"aten::{k}" for k in families[whole]}), "shared kernel file table"
    words = [WORD_KEYS.get(w, w) for w in camel_words(stem) if w not in GENERIC_WORDS]
    best: tuple[set[str], str] = (set(), "")
    for key in _joinings(words):  # the most specific joining that names kernels
        hit = names.matching(key)
        if hit and len(key) > len(best[1]):
            best = (hit, key)
    if best[0]:
        return names.with_forward(best[0]), f"file name ~ kernel names containing {best[1]!r}"
    ops: set[str] = set()
    used = []
    for key in dict.fromkeys(words):
        hit = names.matching(key)
        if hit:
            ops |= hit
            used.append(repr(key))
    if ops:
        return names.with_forward(ops), f"file name words ~ kernel names containing {', '.join(used)}"
    return set(), ""


def _joinings(words: list[str]) -> list[str]:
    """Every joining of all ``words`` in order, with ``""`` or ``"_"`` between neighbours
    (``up sample nearest2d`` → ``upsample_nearest2d``, …); at most 6 words are joined."""
    if not words or len(words) > 6:
        return []
    out = [words[0]]
    for w in words[1:]:
        out = [p + sep + w for p in out for sep in ("", "_")]
    return out


#: (commit, path) → the file's text at that commit, or ``None`` when it does not exist there.
SourceReader = Callable[[str, str], "str | None"]


class NativeDefinitions:
    """Which kernels each native file defines at a commit of an upstream checkout.

    ``read`` gives a file's text at a commit (the caller reads git; selection does not).
    Results are cached as ``cache_dir/native_defs-<commit>.json`` (``{path: [ops]}``).
    """

    def __init__(self, read: SourceReader, cache_dir: Path | None = None) -> None:
        self.read = read
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._memo: dict[str, dict[str, list[str]]] = {}

    def _cache(self, commit: str) -> dict[str, list[str]]:
        if commit not in self._memo:
            data: dict[str, list[str]] = {}
            path = self._path(commit)
            if path is not None and path.exists():
                try:
                    data = json.loads(path.read_text())
                except (OSError, ValueError) as exc:
                    log.warning("ignoring unreadable native definitions cache %s: %s", path, exc)
            self._memo[commit] = data
        return self._memo[commit]

    def _path(self, commit: str) -> Path | None:
        safe = re.sub(r"[^\w.-]", "_", commit)
        return self.cache_dir / f"native_defs-{safe}.json" if self.cache_dir is not None else None

    def ops(self, commit: str, path: str, kernels: Mapping[str, list[str]]) -> list[str] | None:
        """The ops whose kernels ``path`` defines at ``commit``; ``None`` if it cannot be read."""
        from selection.attribution.source_map import native_file_ops

        cache = self._cache(commit)
        if path not in cache:
            text = self.read(commit, path)
            if text is None:
                return None
            cache[path] = native_file_ops(text, dict(kernels))
            target = self._path(commit)
            if target is not None:
                write_atomic(target, json.dumps(cache, sort_keys=True))
        return cache[path]
