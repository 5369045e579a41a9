"""Turning a ``SpecItem``'s mode, tags and identity into pytest marks and JUnit properties.

Shared by the spec-file items (``test_specs.plugin``) and the upstream source-tree items
(``test_specs.upstream.tree``), so a mode means the same in both: ``skip`` → skipped with the reason,
``xfail`` → non-strict xfail (a pass is ``xpassed``), ``xfail_strict`` → strict; tags become marks
(torch-spyre's ``tags``).
"""

from __future__ import annotations

import pytest

from test_specs.values.items import SpecItem

PROPERTY_KEYS = ("id", "upstream", "op", "variant", "module", "dtype", "mode", "reason", "issue")


def apply_spec_item(item: pytest.Item, it: SpecItem) -> None:
    """Add ``it``'s JUnit properties, tag marks and skip/xfail mark (reason + issue) to ``item``."""
    for key in PROPERTY_KEYS:
        value = getattr(it, key)
        if value is not None:
            item.user_properties.append((key, value))
    for tag in it.tags:
        item.config.addinivalue_line("markers", f"{tag}: spec tag")
        item.add_marker(getattr(pytest.mark, tag))
    _mode_mark(item, it)


_MODE_MARKS = ("skip", "xfail")
_MODE_KEYS = ("mode", "reason", "issue")


def set_mode(item: pytest.Item, it: SpecItem) -> None:
    """Give ``item`` (already through ``apply_spec_item``) the mode of ``it`` instead: its
    skip/xfail mark and its mode/reason/issue properties are replaced (``test_specs.values.planned``)."""
    item.own_markers[:] = [m for m in item.own_markers if m.name not in _MODE_MARKS]
    item.user_properties[:] = [p for p in item.user_properties if p[0] not in _MODE_KEYS]
    for key in _MODE_KEYS:
        value = getattr(it, key)
        if value is not None:
            item.user_properties.append((key, value))
    _mode_mark(item, it)


def _mode_mark(item: pytest.Item, it: SpecItem) -> None:
    why = " ".join(x for x in (it.reason, f"[{it.issue}]" if it.issue else None) if x) or it.mode
    if it.mode == "skip":
        item.add_marker(pytest.mark.skip(reason=why))
    elif it.mode in ("xfail", "xfail_strict"):
        item.add_marker(pytest.mark.xfail(reason=why, strict=it.mode == "xfail_strict", run=True))
