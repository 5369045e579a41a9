"""Virtual environments install this checkout: ``project_root`` must find its pyproject.toml."""

from __future__ import annotations

from pathlib import Path

from relay.envs.environments import project_root


def test_project_root_is_the_checkout_not_the_relay_package() -> None:
    root = project_root()
    assert (root / "pyproject.toml").is_file() and (root / "relay" / "envs").is_dir()
    assert root == Path(__file__).resolve().parents[2]
