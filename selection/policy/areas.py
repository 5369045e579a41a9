"""Which test area a changed repository path touches, and which area a spec item belongs to.

``RULES`` maps globs over repository paths (also wheel paths for everything under ``torch/``) to
areas (``ops``, ``modules``, ``device``, ``testing``, …); ``WIDEN`` is the pseudo-area "every area
the backend profile wants".  Scope (stage 1) keeps the candidates of the touched areas; memory
(stage 2) reads the same rules for files it cannot attribute (fail soft in their area).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import translate

from selection.stage import Candidate

__all__ = ["WIDEN", "PathRule", "RULES", "areas_of", "item_area"]

WIDEN = "*"  # pseudo-area: every area the profile wants


@dataclass(frozen=True)
class PathRule:
    """``pattern`` (fnmatch glob over the repo path) → ``areas`` ("" areas = inert file)."""

    pattern: str
    areas: tuple[str, ...]
    why: str


RULES: tuple[PathRule, ...] = (
    PathRule("docs/*", (), "documentation"),
    PathRule("*.md", (), "documentation"),
    PathRule("*.rst", (), "documentation"),
    PathRule(".github/*", (), "CI configuration"),
    PathRule(".ci/*", (), "CI configuration"),
    PathRule(".circleci/*", (), "CI configuration"),
    PathRule("*.dist-info/*", (), "packaging metadata"),
    PathRule("torch/testing/_internal/opinfo/core.py", ("ops",), "OpInfo machinery every op test uses"),
    PathRule("torch/testing/_internal/opinfo/utils.py", ("ops",), "OpInfo machinery every op test uses"),
    PathRule("torch/testing/_internal/common_methods_invocations.py", ("ops",), "OpInfo definitions"),
    PathRule("torch/testing/_internal/opinfo/*", ("ops",), "OpInfo definitions"),
    PathRule("torch/testing/_internal/common_modules.py", ("modules",), "ModuleInfo definitions"),
    PathRule("torch/testing/_internal/distributed/*", ("distributed",), "distributed test machinery"),
    PathRule("torch/testing/_creation.py", (WIDEN,), "make_tensor, used by every sample input"),
    PathRule("torch/testing/_comparison.py", (WIDEN,), "assert_close, used by every comparison"),
    PathRule("torch/testing/_internal/*", ("testing",), "upstream test-file machinery"),
    PathRule("torch/testing/*", ("testing",), "torch.testing"),
    PathRule("torch/distributed/*", ("distributed",), "distributed"),
    PathRule("torch/_dynamo/*", ("dynamo",), "dynamo"),
    PathRule("torch/_inductor/*", ("inductor",), "inductor"),
    PathRule("torch/cuda/*", ("cuda",), "CUDA runtime"),
    PathRule("*/cuda/*", ("cuda",), "CUDA code"),
    PathRule("*.cu", ("cuda",), "CUDA kernel"),
    PathRule("*.cuh", ("cuda",), "CUDA kernel"),
    PathRule("torch/lib/*cuda*", ("cuda",), "CUDA library"),
    PathRule("torch/lib/*nccl*", ("distributed",), "NCCL library"),
    PathRule("torch/mps/*", ("mps",), "MPS runtime"),
    PathRule("*/mps/*", ("mps",), "MPS code"),
    PathRule("torch/xpu/*", ("xpu",), "XPU runtime"),
    PathRule("torch/utils/backend_registration.py", ("device",), "PrivateUse1 registration"),
    PathRule("*PrivateUse1*", ("device",), "PrivateUse1 hooks"),
    PathRule("torch/nn/modules/*", ("modules", "ops"), "nn modules (and their functional ops)"),
    PathRule("torch/nn/functional.py", ("ops", "modules"), "nn.functional"),
    PathRule("torch/nn/*", ("modules",), "nn"),
    PathRule("torch/_refs/*", ("ops",), "Python references"),
    PathRule("torch/_prims/*", ("ops",), "prims"),
    PathRule("torch/_decomp/*", ("ops",), "decompositions"),
    PathRule("torch/_meta_registrations.py", ("ops",), "meta kernels"),
    PathRule("torch/_tensor.py", ("ops",), "Tensor methods"),
    PathRule("torch/functional.py", ("ops",), "torch functions"),
    PathRule("torch/_torch_docs.py", (), "documentation"),
    PathRule("torch/_tensor_docs.py", (), "documentation"),
    PathRule("aten/src/ATen/native/native_functions.yaml", ("ops", "modules"), "op schemas"),
    PathRule("aten/src/ATen/native/*", ("ops", "modules"), "native kernels"),
    PathRule("torch/include/ATen/ops/*", ("ops", "modules"), "per-op ATen headers"),
    PathRule("torch/include/*", ("ops",), "C++ headers of the compiled library"),
    PathRule("aten/*", ("ops", "modules"), "ATen"),
    PathRule("c10/*", ("ops",), "c10 core"),
    PathRule("torch/lib/libtorch_cpu*", ("ops",), "CPU kernels (binary)"),
    PathRule("torch/csrc/*", ("ops",), "C++ frontend"),
    PathRule("test/*", (), "upstream test file (not reused by these specs)"),
)


#: One alternation of every rule's glob; alternatives are tried in order at position 0, so the
#: first group that matches is the first rule that matches (one regex call per path).
_ALL = re.compile("|".join(f"(?P<r{n}>{translate(r.pattern)})" for n, r in enumerate(RULES)))


def areas_of(path: str) -> tuple[tuple[str, ...], str] | None:
    """The areas a changed ``path`` touches and the rule's reason; ``None`` when no rule matches."""
    m = _ALL.match(path)
    if m is None:
        return None
    rule = RULES[int(m.lastgroup[1:])]
    return rule.areas, rule.why


def item_area(candidate: Candidate) -> str:
    """The area of a spec item: ``ops`` for OpInfo items, ``modules`` for ModuleInfo items."""
    return "modules" if candidate.item.module is not None else "ops"
