"""Allowlist rules the fixtures do not pin: every error names where it is (the operator fixes the
file from the message alone), the grammar's edges, and the allowlist used when none is set."""

from __future__ import annotations

import httpx
import pytest

from relay.crcr.allowlist import (
    DEFAULT_EVENTS,
    AllowEntry,
    Allowlist,
    AllowlistSource,
    allowlist_source,
    parse_allowlist,
)
from relay.errors import AllowlistError


def errors_of(data: object, source: str = "<allowlist>") -> list[str]:
    with pytest.raises(AllowlistError) as err:
        parse_allowlist(data, source)
    return err.value.errors


def test_each_error_names_its_place_in_the_file() -> None:
    assert errors_of({
        "L1": ["", "not a repo!", 5, {"a/b": 1, "c/d": 2}],
        "L2": [{"o/r": {"events": ["push", "nightly", "nightly"], "team": 1}}],
        "L4": {"o/l4": {"bogus": 1}},
        "L3": {"": {"x/y": []}, "npu": ["x/y"]},
    }) == [
        "L1[0]: empty repo name",
        "L1[1]: 'not a repo!' must be in owner/repo format",
        "L1[2]: entry 5 is neither org/repo nor {org/repo: oncalls}",
        "L1[3]: a mapping entry must have exactly one key (org/repo), got 2",
        "L2[0] o/r: unsupported metadata 'team' (expected oncalls, events)",
        "L2[0] o/r: events lists an event twice",
        "L2[0] o/r: unsupported event 'push' (supported: nightly, pull_request)",
        "L4 o/l4: unsupported metadata 'bogus' (expected oncalls, events)",
        "L3: device name must not be empty",
        "L3.npu: must be a mapping {org/repo: [oncall, ...]}",
    ]


def test_two_unsupported_events_and_metadata_keys_are_listed_together() -> None:
    assert errors_of({"L2": [{"o/r": {"events": ["push", "issues"], "team": 1, "x": 2}}]}) == [
        "L2[0] o/r: unsupported metadata 'team', 'x' (expected oncalls, events)",
        "L2[0] o/r: unsupported event 'issues', 'push' (supported: nightly, pull_request)"]


def test_l3_must_be_a_device_mapping_and_the_file_a_mapping() -> None:
    assert errors_of({"L3": ["a/b"]}) == ["L3: must be a device mapping {device: {org/repo: [oncall, ...]}}"]
    with pytest.raises(AllowlistError) as err:
        parse_allowlist(["a/b"], "allow.yaml")
    assert str(err.value) == "allow.yaml: expected a mapping with L1-L4 keys, got list"


def test_every_duplicate_is_reported() -> None:
    assert errors_of({"L1": ["a/b", "c/d"], "L2": ["a/b", "c/d"]}) == [
        "duplicate repo 'a/b': listed at L1 and L2; a repo sits at one level only",
        "duplicate repo 'c/d': listed at L1 and L2; a repo sits at one level only"]


def test_an_empty_or_unset_device_does_not_hide_the_devices_after_it() -> None:
    found = parse_allowlist({"L3": {"npu": None, "spyre": {"Xilinx/spyre-ci/": ["ann"]}}})
    assert found.get("Xilinx/spyre-ci") == AllowEntry("Xilinx/spyre-ci", "L3", "spyre", ("ann",))
    assert errors_of({"L3": {"": {"a/b": []}, " ": {}, "spyre": {"c/d": [], "bad name": []}}}) == [
        "L3: device name must not be empty", "L3: device name must not be empty",
        "L3.spyre: 'bad name' must be in owner/repo format"]


def test_an_empty_file_is_an_empty_allowlist_and_levels_are_looked_up_by_name() -> None:
    assert parse_allowlist(None) == Allowlist()
    found = parse_allowlist({"L2": ["a/b"], "L4": ["c/d"]})
    assert (found.level_of("a/b"), found.level_of("c/d"), found.level_of("x/y")) == ("L2", "L4", None)


def test_an_l4_mapping_warns_once_and_names_its_entries() -> None:
    found = parse_allowlist({"L4": {"a/b": "ann, bob", "c/d": None}})
    assert found.warnings == ("L4 written as a mapping; CRCR expects a list like L1/L2",)
    assert found.get("a/b") == AllowEntry("a/b", "L4", None, ("ann", "bob"), DEFAULT_EVENTS)


def test_without_an_allowlist_only_this_relays_backend_runs_at_l2() -> None:
    assert Allowlist.local_only("spyre-sim").entries == {"spyre-sim": AllowEntry("spyre-sim", "L2")}
    current = allowlist_source(None, "spyre-sim")
    assert current.get().entries == {"spyre-sim": AllowEntry("spyre-sim", "L2")} and current.get().external() == []


def test_a_url_allowlist_is_read_through_the_given_transport_and_its_errors_name_the_url() -> None:
    url = "https://config.example.org/allowlist.yaml"
    good = AllowlistSource(url, transport=httpx.MockTransport(lambda r: httpx.Response(200, text="L2: [a/b]\n")))
    assert good.get().level_of("a/b") == "L2" and good.refresh_s == 5.0
    bad = httpx.MockTransport(lambda r: httpx.Response(200, text="L2: [bad name]\n"))
    with pytest.raises(AllowlistError) as err:
        AllowlistSource(url, transport=bad).get()
    assert err.value.source == url
    assert err.value.errors == ["L2[0]: 'bad name' must be in owner/repo format"]


def test_a_file_allowlist_refreshes_every_5_seconds_by_default(tmp_path) -> None:
    path = tmp_path / "allow.yaml"
    path.write_text("L1: [a/b]\n")
    source = allowlist_source(str(path), "spyre-sim")
    assert source.get().level_of("a/b") == "L1" and source.refresh_s == 5.0


def test_a_bare_name_is_accepted_only_when_it_is_this_relays_backend(tmp_path) -> None:
    """CRCR refuses every entry without ``/``; ours accepts exactly one bare name, its own
    ``RELAY_BACKEND``, so a typo of ``org/repo`` (``acme-ci``) or of the backend is an error."""
    found = parse_allowlist({"L2": ["spyre-sim", "a/b"]}, backend="spyre-sim")
    assert found.get("spyre-sim").local and not found.get("a/b").local
    assert errors_of({"L2": ["spyre-sim", "acme-ci", "spyre-simm"]}) == [
        "L2[0]: 'spyre-sim' must be in owner/repo format",
        "L2[1]: 'acme-ci' must be in owner/repo format",
        "L2[2]: 'spyre-simm' must be in owner/repo format"]
    with pytest.raises(AllowlistError) as err:
        parse_allowlist({"L2": ["spyre-sim", "acme-ci"]}, backend="spyre-sim")
    assert err.value.errors == ["L2[1]: 'acme-ci' must be in owner/repo format (a bare name is "
                                "allowed only for this relay's own backend, RELAY_BACKEND='spyre-sim')"]
    path = tmp_path / "allow.yaml"
    path.write_text("L2: [spyre-sim, other-backend]\n")
    with pytest.raises(AllowlistError, match="'other-backend' must be in owner/repo format"):
        allowlist_source(str(path), "spyre-sim")
    path.write_text("L2: [spyre-sim]\n")
    assert allowlist_source(str(path), "spyre-sim").get().get("spyre-sim").local
