"""What a run was compared with: its ``Baseline``, said on its page and in its JSON.

Every run gets verdicts against a baseline (PyTorch CI's rule: a failure already on trunk is
BROKEN_TRUNK, never the change's fault).  Kinds, in the order the pipeline tries them:

================= =================================================================================
``base_env``      a regression run (``RELAY_COMMIT_ENV``, ``--head-env``/``--base-env``): the
                  change's base commit run in the base environment (``relay.pipeline.baseline``)
``trunk_at_base`` no per-commit environment: stored trunk runs (the main ref, never a pull
                  request's; same backend; no environment of their own) of the change's base
                  commit that ran the same spec items (test id and mode)
``newest_trunk``  as ``trunk_at_base``, but no trunk run of the base commit ran them: the newest
                  trunk runs that did (per test, newest first)
``establishes``   a trunk run (a push to the main ref) with no earlier trunk run of these tests:
                  this run *is* the trunk baseline; its failing tests are listed
``none``          neither a trunk run nor a trunk history (a replay of a file, a pull request on
                  a fresh state directory): failures are NEW, said so in each reason
================= =================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from test_specs.values.results import TestResult

__all__ = ["Baseline", "BaselineKind", "TRUNK_KINDS", "TrunkFound", "summary"]

BaselineKind = Literal["base_env", "trunk_at_base", "newest_trunk", "establishes", "none"]
#: kinds whose base results come from trunk runs
TRUNK_KINDS = ("trunk_at_base", "newest_trunk")
#: failing tests named in a summary line before "and N more"
_NAMED = 5


class Baseline(BaseModel):
    """The baseline of one run.

    ``runs``: the stored runs whose results were the base (newest first); ``commits``: their
    head commits, in the same order; ``main_ref``: the trunk ref (trunk kinds and
    ``establishes``); ``compared``: tests with a base result; ``failing_on_trunk``: tests
    failing in the baseline (for ``establishes``: failing in this run, which is the baseline);
    ``summary``: one sentence for the run page (``summary()`` builds it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: BaselineKind
    runs: list[str] = Field(default_factory=list)
    commits: list[str] = Field(default_factory=list)
    main_ref: str | None = None
    compared: int = 0
    failing_on_trunk: list[str] = Field(default_factory=list)
    summary: str = ""


@dataclass
class TrunkFound:
    """Trunk results found for a run's tests (``relay.store.trunk_baseline``): ``results``: test
    id → its trunk result; ``source``: test id → the run it came from; ``runs``: ``(run id,
    head commit)`` of the runs used, in reading order (the base commit's first)."""

    results: dict[str, TestResult] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)
    runs: list[tuple[str, str]] = field(default_factory=list)


def _named(ids: list[str]) -> str:
    head = ", ".join(ids[:_NAMED])
    return head + (f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else "")


def summary(b: Baseline, *, base: str | None = None) -> str:
    """The sentence the run page and JSON show for ``b``; ``base``: the change's base commit."""
    runs = ", ".join(f"{r} ({c[:12]})" for r, c in zip(b.runs, b.commits, strict=False)) or "-"
    failing = (f"; {len(b.failing_on_trunk)} of them fail on trunk: {_named(b.failing_on_trunk)}"
               if b.failing_on_trunk else "; none of them fails on trunk")
    if b.kind == "base_env":
        return f"compared with base commit {(base or '?')[:12]} in the base environment"
    if b.kind == "trunk_at_base":
        return (f"compared with trunk ({b.main_ref}) at this change's base {(base or '?')[:12]}: "
                f"run {runs}, {b.compared} tests{failing}")
    if b.kind == "newest_trunk":
        at = f"no trunk run of base {base[:12]} ran these tests, so " if base else ""
        return (f"{at}compared with the newest trunk ({b.main_ref}) runs that did: {runs}, "
                f"{b.compared} tests{failing}")
    if b.kind == "establishes":
        tail = (f"{len(b.failing_on_trunk)} tests fail on trunk: {_named(b.failing_on_trunk)}"
                if b.failing_on_trunk else "no test fails on trunk")
        return f"first trunk ({b.main_ref}) run of these tests: it establishes the trunk baseline; {tail}"
    return ("no trunk run to compare with (not a run of the main ref, and no trunk run of these tests "
            "is stored): every failure counts as NEW")
