"""Every allowlist of ``../shared/fixtures/crcr-allowlists`` (CRCR's own examples and invalid
cases) through the loader, against ``expect.json``: accepted files give each repo its level;
refused ones raise ``AllowlistError`` — except where expect.json names our deliberate difference."""

from __future__ import annotations

import json

import pytest
import yaml

from relay.crcr.allowlist import AllowlistSource
from relay.errors import AllowlistError
from tests.fakes.fixtures import fixture_dir, fixture_names

NAMES = fixture_names("crcr-allowlists", "*.yaml")


def _expect() -> dict:
    return json.loads((fixture_dir("crcr-allowlists") / "expect.json").read_text())


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(_expect()) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_allowlist_fixture(name: str) -> None:
    path = fixture_dir("crcr-allowlists") / name
    expect = _expect()[name]
    if expect["accept"]:
        allowlist = AllowlistSource(str(path)).get()
        assert {n: e.level for n, e in allowlist.entries.items()} == expect["levels"]
    elif "spyre_relay" in expect:  # refused as in CRCR, unless the bare name is our backend
        with pytest.raises(AllowlistError, match="must be in owner/repo format"):
            AllowlistSource(str(path), backend="spyre-sim")
        bare = [str(n) for names in yaml.safe_load(path.read_text()).values() for n in names]
        for backend in bare:
            allowlist = AllowlistSource(str(path), backend=backend).get()
            assert [e.name for e in allowlist.entries.values() if e.local] == [backend]
    else:
        with pytest.raises(AllowlistError):
            AllowlistSource(str(path))


def test_crcr_test_map_devices_and_oncalls() -> None:
    """CRCR ``TestAllowlistMap``: devices, oncalls in level then entry order."""
    allowlist = AllowlistSource(str(fixture_dir("crcr-allowlists") / "crcr_test_allowlist.yaml")).get()
    assert [e.name for e in allowlist.at_or_above("L1")] == ["a/1", "b/device1-repo",
                                                            "b/device2-repo", "c/3"]
    assert allowlist.get("b/device1-repo").device == "device1"
    assert allowlist.get("b/device1-repo").oncalls == ("oncall_b",)
    assert allowlist.get("c/3").oncalls == ("oncall_c",)
    assert allowlist.get("a/1").device is None
    readme = AllowlistSource(str(fixture_dir("crcr-allowlists") / "crcr_readme_allowlist.yaml")).get()
    assert readme.get("org5/repo5").oncalls == ("oncall1", "oncall2")


def test_unknown_key_is_a_warning_and_slashes_are_stripped() -> None:
    extra = AllowlistSource(str(fixture_dir("crcr-allowlists") / "extra_top_level_key.yaml")).get()
    assert any("notes" in w for w in extra.warnings)
    slash = AllowlistSource(str(fixture_dir("crcr-allowlists") / "trailing_slash.yaml")).get()
    assert sorted(slash.entries) == ["org1/repo1", "org3/repo3"]
