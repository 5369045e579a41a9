"""Fixtures for the ChangeSet builder: small trees and wheels written into ``tmp_path``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.changes.changes_helpers import NEW, OLD, write_tree, write_wheel


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    """Two extracted trees, ``OLD`` and ``NEW``."""
    return write_tree(tmp_path / "old", OLD), write_tree(tmp_path / "new", NEW)


@pytest.fixture
def wheels(tmp_path: Path) -> tuple[Path, Path]:
    """Two wheels demo-1.0 / demo-1.1 holding ``OLD`` and ``NEW``."""
    return (write_wheel(tmp_path / "demo-1.0-py3-none-any.whl", OLD, version="1.0"),
            write_wheel(tmp_path / "demo-1.1-py3-none-any.whl", NEW, version="1.1"))
