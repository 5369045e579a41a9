"""Change files the CLI reads: a JSON file nesting past Python's recursion limit is refused with
the file's name, not a RecursionError traceback (the webhook intake refuses such bodies too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.changes.inputs import load_changeset
from relay.errors import InputError


def test_a_deeply_nested_change_file_is_a_clear_input_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="deep.json: JSON nests too deeply"):
        load_changeset(str(deep))
