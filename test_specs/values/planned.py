"""``ModeRule``: the mode a run decided for one item, carried from selection to pytest.

Stage 3 (``selection.stages.classify``) may run an item in another mode than its spec gives it — an
item whose op has no Spyre kernel is predicted ``xfail`` — and every execution path (``relay
replay``, a webhook's run, Celery shards, bisection rounds, stage 4's reruns) must run it in that
mode.  The runner (``test_specs.run.runner.run_items(modes=...)``) writes the rules as JSON
``{item id: {"mode": ..., "reason": ...}}`` to ``<workdir>/modes.json``; the plugin reads it
(``--spyre-modes=FILE``) and ``overridden`` gives each collected item its run mode, so the
JUnit properties, the items file and every ``TestResult.mode`` say the mode it ran in.

An id without a rule, or a rule equal to the spec's own mode, keeps the spec's mode and reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, TypeAdapter

from test_specs.values.items import SpecItem
from test_specs.values.modes import Mode

__all__ = ["ModeRule", "write_rules", "read_rules", "overridden"]


class ModeRule(BaseModel):
    """How one item runs: ``mode`` (torch-spyre's modes) and the reason for it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Mode
    reason: str | None = None


_RULES = TypeAdapter(dict[str, ModeRule])


def write_rules(path: Path, rules: Mapping[str, ModeRule]) -> Path:
    """Write ``rules`` as JSON to ``path``; returns ``path``."""
    path.write_text(json.dumps({k: v.model_dump() for k, v in sorted(rules.items())}), encoding="utf-8")
    return path


def read_rules(path: Path) -> dict[str, ModeRule]:
    """The rules written by ``write_rules``; raises ``OSError`` or pydantic's ``ValidationError``."""
    return _RULES.validate_json(Path(path).read_bytes())


def overridden(item: SpecItem, rule: ModeRule | None) -> SpecItem | None:
    """``item`` in the mode of ``rule`` (its reason replaces the spec's, its issue is dropped
    unless the mode is unchanged); ``None`` when the rule changes nothing."""
    if rule is None or rule.mode == item.mode:
        return None
    return item.model_copy(update={"mode": rule.mode, "reason": rule.reason, "issue": None})
