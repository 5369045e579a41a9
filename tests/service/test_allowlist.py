"""The CRCR allowlist: format, metadata, validation (every error at once), reload from file and URL."""

from __future__ import annotations

import os

import pytest
import yaml
from fastapi import FastAPI, Request, Response

from relay.crcr.allowlist import AllowlistSource, parse_allowlist
from relay.errors import AllowlistError
from tests.service.conftest import ALLOWLIST_YAML


def test_levels_devices_oncalls_and_local_backend() -> None:
    al = parse_allowlist(yaml.safe_load(ALLOWLIST_YAML), backend="spyre-sim")
    assert [(e.name, e.level) for e in al.external()] == [
        ("acme/l1-ci", "L1"), ("acme/l2-ci", "L2"), ("acme/l3-ci", "L3"), ("acme/l4-ci", "L4")]
    assert al.get("acme/l3-ci").device == "spyre" and al.get("acme/l3-ci").oncalls == ("alice",)
    assert al.get("acme/l3-ci").checks_label == "ciflow/crcr/spyre"
    assert al.get("acme/l4-ci").oncalls == ("bob", "carol")
    assert al.get("spyre-sim").local and al.get("spyre-sim").level == "L2"


def test_entry_metadata_events_and_oncalls() -> None:
    """CRCR ``test_parse_entry_metadata`` / ``test_legacy_entries_default_to_pull_request_and_nightly``."""
    al = parse_allowlist(yaml.safe_load("""
L2:
  - a/plain
  - a/nightly: {events: [nightly], oncalls: "x, y"}
L3:
  dev:
    a/dev: {events: [pull_request, nightly], oncalls: [z]}
"""))
    assert al.get("a/plain").events == {"pull_request", "nightly"}
    assert al.get("a/nightly").events == {"nightly"} and al.get("a/nightly").oncalls == ("x", "y")
    assert al.get("a/dev").oncalls == ("z",)
    assert [e.name for e in al.external("pull_request")] == ["a/dev", "a/plain"]


@pytest.mark.parametrize("meta, message", [
    ({"events": ["push"]}, "unsupported event"),
    ({"owner": "me"}, "unsupported metadata"),
    ({"events": []}, "non-empty list"),
    ({"oncalls": 3}, "oncalls must be"),
])
def test_invalid_metadata_refused(meta, message) -> None:
    with pytest.raises(AllowlistError, match=message):
        parse_allowlist({"L2": [{"org/repo": meta}]})


def test_every_error_reported_at_once() -> None:
    with pytest.raises(AllowlistError) as info:
        parse_allowlist({"L1": ["a/b", "bad name!", 7, {"x/y": 1, "x/z": 2}], "L2": "a/c",
                         "L4": ["a/b"], "L3": {"spyre": ["a/d"], " ": {}}, "L9": []}, "al.yaml")
    errors = info.value.errors
    assert any("L2: must be a list" in e for e in errors)
    assert any("duplicate repo 'a/b': listed at L1 and L4" in e for e in errors)
    assert any("L3.spyre: must be a mapping" in e for e in errors)
    assert any("'bad name!' must be in owner/repo format" in e for e in errors)
    assert any("exactly one key" in e for e in errors)
    assert any("device name must not be empty" in e for e in errors)
    assert not any("L9" in e for e in errors)  # unknown keys are ignored, not errors
    assert str(info.value).startswith("al.yaml: ")


def test_l4_mapping_of_older_files_still_read_with_a_warning() -> None:
    al = parse_allowlist({"L4": {"a/four": "ops"}})
    assert al.get("a/four").level == "L4" and al.get("a/four").oncalls == ("ops",)
    assert any("L4 written as a mapping" in w for w in al.warnings)


def test_same_repo_under_two_devices_refused() -> None:
    with pytest.raises(AllowlistError, match="listed twice at L3"):
        parse_allowlist({"L3": {"spyre": {"a/b": []}, "aiu": {"a/b": []}}})


def test_file_reloaded_when_mtime_changes_and_bad_reload_kept(tmp_path) -> None:
    path = tmp_path / "al.yaml"
    path.write_text("L1: [a/one]\n")
    src = AllowlistSource(str(path), refresh_s=0)
    assert [e.name for e in src.get().external()] == ["a/one"]
    path.write_text("L2: [a/two]\n")
    os.utime(path, ns=(1, 2_000_000_000_000_000_000))
    assert [(e.name, e.level) for e in src.get().external()] == [("a/two", "L2")]
    path.write_text("L2: [a/two]\nL1: [a/two]\n")  # invalid: kept the previous one
    os.utime(path, ns=(1, 3_000_000_000_000_000_000))
    assert [e.name for e in src.get().external()] == ["a/two"] and src.reloads == 2
    with pytest.raises(AllowlistError):
        src.refresh()  # an explicit refresh reports the failure, the value stays
    assert [e.name for e in src.get().external()] == ["a/two"]
    with pytest.raises(AllowlistError, match="cannot read"):
        AllowlistSource(str(tmp_path / "missing.yaml"))


def test_url_reloaded_by_etag(live_server) -> None:
    state = {"text": "L1: [a/one]\n", "etag": '"v1"', "gets": [], "answers": []}
    app = FastAPI()

    @app.get("/allowlist.yaml")
    def allowlist(request: Request) -> Response:
        state["gets"].append(request.headers.get("if-none-match"))
        if request.headers.get("if-none-match") == state["etag"]:
            state["answers"].append(304)
            return Response(status_code=304)
        state["answers"].append(200)
        return Response(state["text"], media_type="text/yaml", headers={"ETag": state["etag"]})

    url = live_server(app).url + "/allowlist.yaml"
    src = AllowlistSource(url, refresh_s=0)
    src.get()
    assert state["answers"] == [200, 304] and state["gets"][1] == '"v1"'
    state.update(text="L4: [a/four: ops]\n", etag='"v2"')
    assert [(e.name, e.level) for e in src.get().external()] == [("a/four", "L4")]
    assert src.reloads == 2


def test_bad_allowlist_refuses_to_start(tmp_path, settings) -> None:
    from relay.service import create_app

    path = tmp_path / "al.yaml"
    path.write_text("L1: [a/b]\nL2: [a/b]\n")
    with pytest.raises(AllowlistError, match="one level only"):
        create_app(settings.model_copy(update={"allowlist": str(path)}))
