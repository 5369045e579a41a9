"""Upgrade mode: selection for a change between two upstream *versions* rather than one PR.

A release-to-release ChangeSet (``relay.changes.build_changeset`` over two wheels, trees or
revisions) differs from a PR in two ways that change what selection should do:

1. It always touches the shared test machinery.  Between 2.13.0 and 2.14.1,
   ``torch/testing/_comparison.py`` (``assert_close``), ``torch/testing/_creation.py``
   (``make_tensor``) and ``torch/testing/_internal/opinfo/core.py`` (``OpInfo``,
   ``DecorateInfo``) all changed, as they do in most releases.  PR mode widens scope to every
   test on such a change, which in upgrade mode would mean "always run everything" — the result
   the seed system's ~4,000-of-tens-of-thousands selection exists to avoid.

2. Its changed tests are already named: new and changed OpInfo entries (``op_db[softmax]`` — new
   entries, changed sample inputs, changed decorators/skips all show up as a changed entry), changed
   sample-input generators, and the per-op headers and Python symbols of ops whose
   implementation changed.

**Decision.** In upgrade mode a machinery file (``MACHINERY``) does not widen scope.  It selects a
deterministic *canary* cross-section instead: for every (template, dtype) pair, the items of
``CANARY_OPS`` present in the universe, topped up to ``CANARIES_PER_GROUP`` by id.  Why this is
enough: a regression in ``assert_close`` or ``make_tensor`` or OpInfo decorator resolution
reaches every test that goes through it, so any cross-section covering every template and dtype
shows it; and every test selected for its own reason (changed entry, changed op) goes through
the same machinery too.  What this gives up: a machinery change that breaks only a few ops'
tests and whose ops did not otherwise change — a known, documented gap; PR mode (a single PR
that edits the machinery, rare and deliberate) keeps widening to everything.

Measured on ``examples/changes/torch-2.13.0..2.14.1.json`` (1,848 files) with the bundled specs
(488 items, 100 of them runnable on spyre-sim): PR mode keeps all 488 (346 only by widening);
upgrade mode keeps 178 — 104 changed definitions, 38 impacted ops, 36 canaries — of which 38 run.

Mode is chosen by the caller (``relay select --upgrade``, ``--from/--to``) or, with
``mode="auto"``, from the ChangeSet: ``base`` and ``head`` of the form ``name==version`` (what
``build_changeset`` records for wheels) mean upgrade.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from selection.models import ChangeSet
from selection.stage import Candidate

#: Test machinery every reused test goes through (widens in PR mode; canaries in upgrade mode).
MACHINERY: tuple[str, ...] = (
    "torch/testing/_comparison.py",
    "torch/testing/_creation.py",
    "torch/testing/_internal/opinfo/core.py",
    "torch/testing/_internal/opinfo/utils.py",
)
#: Ops used first as canaries: cheap, supported everywhere, exercising elementwise, reduction,
#: matmul, normalisation and shape paths of the comparison machinery.
CANARY_OPS: tuple[str, ...] = ("add", "mul", "sum", "mm", "softmax", "cat", "where", "abs")
CANARIES_PER_GROUP = 4
UPGRADE_MODE, PR_MODE = "upgrade", "pr"


def is_machinery(path: str) -> bool:
    """True for the shared test-machinery files (``MACHINERY``)."""
    return any(fnmatchcase(path, p) for p in MACHINERY)


def resolve_mode(mode: str, changeset: ChangeSet) -> str:
    """``"pr"`` or ``"upgrade"``; ``"auto"`` reads the ChangeSet (see the module docstring).

    Raises ``ValueError`` for any other ``mode``.
    """
    if mode in (PR_MODE, UPGRADE_MODE):
        return mode
    if mode != "auto":
        raise ValueError(f"unknown selection mode {mode!r}; expected pr, upgrade or auto")
    versions = "==" in changeset.base and "==" in changeset.head
    return UPGRADE_MODE if versions else PR_MODE


def canaries(candidates: Sequence[Candidate], k: int = CANARIES_PER_GROUP) -> list[Candidate]:
    """The canary cross-section of ``candidates``: per (template, dtype), up to ``k`` items.

    ``CANARY_OPS`` come first (in that order), then the lowest ids; ModuleInfo items form
    their own groups the same way.  Deterministic for the same candidates in any order.
    """
    rank = {op: n for n, op in enumerate(CANARY_OPS)}
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for c in candidates:
        groups.setdefault((c.item.template, c.item.dtype), []).append(c)
    out: list[Candidate] = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda c: (rank.get(c.item.op or "", len(rank)), c.item.id))
        out.extend(members[:k])
    return out
