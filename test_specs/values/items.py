"""``SpecItem``: one concrete test a spec expands to (op or module × dtype × template).

A spec item is the unit that selection ranks and the runner executes.  Its ``id`` is stable
across runs and machines: ``<suite>::<template>[<op>-<dtype>]`` for OpInfo items (the op part
is ``name`` or ``name.variant``), ``<suite>::<template>[<module>-<dtype>]`` for ModuleInfo items.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from test_specs.values.modes import Mode


class Tolerance(BaseModel):
    """Absolute and relative tolerance for one dtype (``torch.testing.assert_close`` terms)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    atol: float
    rtol: float


class SpecItem(BaseModel):
    """One expanded test: what to run, how (``mode``) and why that mode (``reason``/``issue``).

    ``upstream`` names the generic upstream test the template mirrors (e.g.
    ``test/test_ops.py::TestCommon::test_compare_cpu``); exactly one of ``op`` (OpInfo name,
    ``variant`` its ``variant_test_name``) and ``module`` (ModuleInfo name, e.g. ``nn.Linear``)
    is set, except for source-tree items (``path`` entries), which carry ``op``/``module`` only
    when the instantiated test names one; ``tolerance`` is the effective one for
    ``dtype`` after the spec's precedence rules; ``None`` means the template default.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    suite: str
    template: str
    upstream: str
    op: str | None = None
    variant: str | None = None
    module: str | None = None
    dtype: str
    mode: Mode = "mandatory_success"
    reason: str | None = None
    issue: str | None = None
    tags: list[str] = Field(default_factory=list)
    tolerance: Tolerance | None = None
    max_samples: int | None = None  # sample cap (spec ``global.input_config.max_samples``)

    @property
    def subject(self) -> str:
        """``op`` (with ``.variant``) or ``module``: the thing under test."""
        if self.op is not None:
            return f"{self.op}.{self.variant}" if self.variant else self.op
        return self.module or ""


def make_item_id(suite: str, template: str, subject: str, dtype: str) -> str:
    """The stable id of a spec item; see the module docstring for the shape."""
    return f"{suite}::{template}[{subject}-{dtype}]"
