"""The shared fixture data (``../shared/fixtures`` beside the repository; never copied in).

``fixture_dir(name)`` is the directory, or skips the calling test with the reason when the
shared data is not there (a clone without ``shared/`` beside it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def shared_fixtures() -> Path:
    """``$RELAY_SHARED_FIXTURES`` or ``<repo>/../shared/fixtures``."""
    return Path(os.environ.get("RELAY_SHARED_FIXTURES", ROOT.parent / "shared" / "fixtures"))


def fixture_dir(name: str) -> Path:
    path = shared_fixtures() / name
    if not path.is_dir():
        pytest.skip(f"shared fixture data {path} is absent (expected ../shared/fixtures/{name} "
                    "beside the repository)")
    return path


def fixture_names(name: str, pattern: str) -> list[str]:
    """File names matching ``pattern`` in fixture dir ``name`` (for parametrize; empty when the
    data is absent, and the test then skips through ``fixture_dir``)."""
    path = shared_fixtures() / name
    return sorted(p.name for p in path.glob(pattern)) if path.is_dir() else ["<absent>"]
