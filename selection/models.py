"""Typed value objects that flow through selection: ``ChangeSet`` in, ``Selection`` out.

Shapes follow ../shared/design.md §4.  ``ChangedFile`` accepts one element of GitHub's
PR-files / compare API (``GET /repos/{o}/{r}/pulls/{n}/files``) as-is: unknown GitHub keys
such as ``sha`` or ``blob_url`` are ignored, our own ``symbols`` key is optional.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from test_specs.values.modes import Mode

FileStatus = Literal["added", "removed", "modified", "renamed", "copied", "changed", "unchanged"]


class ChangedFile(BaseModel):
    """One changed upstream file, in GitHub's PR-files API shape (extra GitHub keys ignored).

    ``symbols`` lists the changed top-level definitions of a Python file (functions, classes,
    assignments), found by AST comparison; ``None`` means "not computed", ``[]`` "none changed".
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    filename: str
    status: FileStatus = "modified"
    previous_filename: str | None = None
    patch: str | None = None
    symbols: list[str] | None = None


class ChangeSet(BaseModel):
    """An upstream change: the files between ``base`` and ``head`` (shas or versions).

    ``notes``: how the files were obtained when that bounds what selection can know (e.g. "the
    compare API lists at most 300 files; patches read per commit"); selection repeats them in
    its notes and in the scope reason of every selected test.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    upstream: str = "pytorch/pytorch"
    base: str
    head: str
    title: str = ""
    labels: list[str] = Field(default_factory=list)
    files: list[ChangedFile] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @property
    def filenames(self) -> list[str]:
        """Every touched path, including the old path of a rename."""
        names = [f.filename for f in self.files]
        names += [f.previous_filename for f in self.files if f.previous_filename]
        return names


class StageStats(BaseModel):
    """What one selection stage did: candidates in and out, wall time in ms."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, serialize_by_alias=True)

    name: str
    in_: int = Field(alias="in")
    out: int
    ms: float


class SelectedTest(BaseModel):
    """One candidate test with its stage-3 mode, score in [0, 1] and the reasons for both.

    ``op`` is the OpInfo name exactly as in ``op_db`` (``nn.functional.gelu``), ``module`` the
    ModuleInfo name as in ``module_db`` (``nn.Linear``); ``upstream`` is the generic
    (un-instantiated) upstream test the item mirrors, e.g.
    ``test/test_ops.py::TestCommon::test_compare_cpu``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    upstream: str
    op: str | None = None
    module: str | None = None
    dtype: str | None = None
    mode: Mode = "mandatory_success"
    score: float = 0.0
    reasons: list[str] = Field(default_factory=list)

    @field_validator("score")
    @classmethod
    def _score_range(cls, v: float) -> float:
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"score must lie in [0, 1], got {v}")
        return v


class Selection(BaseModel):
    """The output of selection (design §4): ranked tests, universe size and per-stage stats.

    Invariants (checked on construction): ids are unique and ``selected`` is ordered by
    (-score, id), so sharding that depends on the order is deterministic.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    universe: int
    selected: list[SelectedTest] = Field(default_factory=list)
    stages: list[StageStats] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> Selection:
        ids = [t.id for t in self.selected]
        if len(ids) != len(set(ids)):
            dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
            raise ValueError(f"duplicate test ids in selection: {dup}")
        if self.selected != sorted(self.selected, key=lambda t: (-t.score, t.id)):
            raise ValueError("selected must be sorted by (-score, id)")
        return self

    @property
    def to_run(self) -> list[SelectedTest]:
        """Selected tests whose mode is not ``skip``, in ranked order."""
        return [t for t in self.selected if t.mode != "skip"]
