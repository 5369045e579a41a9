"""Shared machinery → a canary cross-section: at least one test per op family, never zero.

Some upstream code sits under every op rather than in one: type promotion
(``torch/_prims_common``, ``TypeProperties.cpp``), ``TensorIterator``, dispatch stubs
(``DispatchStub.cpp``, ``cpu/Loops.h``), ``c10/core``, and the OpInfo machinery every reused test
goes through (``opinfo/core.py``, ``make_tensor``, ``assert_close``).  A change there can break
any op, so no op-level attribution is right: selecting nothing (what ``_prims_common`` did) misses
everything, selecting everything (what the OpInfo core did) runs the universe.  Instead such a
change — and a native C++ file that nothing attributes (``selection.attribution.native``) — selects
``family_canaries``: for every op family in ``FAMILIES`` (pointwise unary, binary, reduction,
view/shape, indexing, linalg, normalization, activation, module forward) and every
(template, dtype) pair present, one item of the family's preferred ops (OpInfo base entries
before variants), the ops taking turns over the pairs in the order listed — the next op after
the one the previous pair ran — so the same number of canaries runs as many of the family's ops
as there are pairs (``DispatchStub.cpp`` reaches ``abs``, ``neg``, ``exp`` … rather than ``abs``
on every pair).  A family whose ops are all absent from the
universe is skipped (nothing to run); if the set would exceed ``MAX_SHARE`` of the universe it
is cut to one item per (family, template), then per family.  Deterministic for the same
universe in any order.

What this gives up: a machinery change that breaks one rarely used op only.  Such changes are
also caught by the op's own selection when the same PR touches its kernel or OpInfo entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from selection.stage import Candidate

#: Repository globs of shared machinery (see the module docstring).
SHARED_MACHINERY: tuple[str, ...] = (
    "torch/_prims_common/*",
    "c10/core/*",
    "aten/src/ATen/TensorIterator*",
    "aten/src/ATen/native/TensorIterator*",
    "aten/src/ATen/native/TypeProperties.*",
    "aten/src/ATen/native/DispatchStub.*",
    "aten/src/ATen/native/cpu/Loops.h",
    "aten/src/ATen/native/cpu/Reduce.h",
    "aten/src/ATen/native/TensorIteratorReduce.cpp",
    "aten/src/ATen/native/cpu/SerialStackImpl.h",
    "aten/src/ATen/ScalarOps.*",
    "aten/src/ATen/native/Copy.*",
    "aten/src/ATen/native/Resize.*",
    "torch/testing/_internal/opinfo/core.py",
    "torch/testing/_internal/opinfo/utils.py",
    "torch/testing/_creation.py",
    "torch/testing/_comparison.py",
)
#: op family → preferred OpInfo / ModuleInfo names, first present wins per (template, dtype).
FAMILIES: dict[str, tuple[str, ...]] = {
    "pointwise unary": ("abs", "neg", "exp", "sqrt", "sigmoid", "sin", "tanh"),
    "pointwise binary": ("add", "mul", "sub", "div", "maximum"),
    "reduction": ("sum", "mean", "amax", "prod", "var"),
    "view/shape": ("reshape", "transpose", "permute", "view", "cat", "squeeze", "expand"),
    "indexing": ("index_select", "gather", "__getitem__", "index_put", "masked_fill", "take"),
    "linalg": ("mm", "matmul", "addmm", "bmm", "linalg.vector_norm"),
    "normalization": ("nn.functional.layer_norm", "nn.functional.batch_norm",
                      "nn.functional.group_norm", "native_layer_norm"),
    "activation": ("softmax", "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu",
                   "sigmoid"),
    "module forward": ("nn.Linear", "nn.ReLU", "nn.LayerNorm", "nn.Embedding", "nn.Conv2d"),
}
MAX_SHARE = 0.10


def is_shared_machinery(path: str) -> bool:
    """True for a path under ``SHARED_MACHINERY``."""
    return any(fnmatchcase(path, p) for p in SHARED_MACHINERY)


def _name(c: Candidate) -> str:
    return c.item.module or c.item.op or ""


def family_canaries(candidates: Sequence[Candidate], universe: int | None = None
                    ) -> dict[str, list[Candidate]]:
    """Family → its canaries among ``candidates`` (rules in the module docstring).

    ``universe``: the size ``MAX_SHARE`` applies to (default ``len(candidates)``)."""
    cap = int(MAX_SHARE * (universe if universe is not None else len(candidates)))
    rank: dict[str, tuple[str, int]] = {}
    for family, names in FAMILIES.items():
        for n, name in enumerate(names):
            rank.setdefault(name, (family, n))
    # per (family, template, dtype): the best item of each preferred op present there
    present: dict[tuple[str, str, str], dict[int, Candidate]] = {}
    for c in candidates:
        hit = rank.get(_name(c))
        if hit is None:
            continue
        ops = present.setdefault((hit[0], c.item.template, c.item.dtype), {})
        old = ops.get(hit[1])
        if old is None or (c.item.variant is not None, c.item.id) < (old.item.variant is not None, old.item.id):
            ops[hit[1]] = c
    best: dict[tuple[str, str, str], Candidate] = {}
    turn: dict[str, int] = {}
    for key in sorted(present):  # the family's ops take turns over its (template, dtype) pairs
        size = len(FAMILIES[key[0]])
        start = turn.get(key[0], 0)
        pick = min(present[key], key=lambda n: (n - start) % size)
        best[key] = present[key][pick]
        turn[key[0]] = pick + 1
    for coarse in (lambda k: k, lambda k: (k[0], k[1]), lambda k: (k[0],)):
        if len(best) <= cap or not best:
            break
        thinned: dict[tuple, Candidate] = {}
        for key in sorted(best):
            thinned.setdefault(coarse(key), best[key])
        best = thinned
    out: dict[str, list[Candidate]] = {}
    for key in sorted(best):
        out.setdefault(key[0], []).append(best[key])
    return out
