"""Triage verdict validation (CRCR ``tests/test_triage_verdict.py``'s cases, our implementation)."""

from __future__ import annotations

import json
import logging

import pytest

from relay.crcr.verdict import MAX_VERDICT_BYTES
from relay.crcr.verdict import validate_triage_verdict as validate

BASE = {"schema_version": 1, "category": "backend", "confidence": "low", "summary": "s"}
FULL = {"schema_version": 1, "category": "upstream", "confidence": "high", "summary": "x",
        "suspected_upstream": {"pr": 5, "commit": "abcdef1", "reason": "r"},
        "evidence": [{"job": "j", "test": "t", "excerpt": "e", "log_url": "https://x.org/l"}],
        "reproduced_on_retry": True,
        "analyzer": {"name": "a", "version": "1", "model": "m", "prompt_version": "p"},
        "analyzed_at": "2026-01-01T00:00:00Z"}


def test_full_and_minimal_verdicts_round_trip() -> None:
    assert validate(FULL) == FULL
    assert validate(BASE) == BASE
    assert validate(None) is None


def test_unknown_keys_dropped_strings_stripped_and_string_version_accepted() -> None:
    got = validate({**BASE, "schema_version": " 1", "summary": " s ", "owner": "x"})
    assert got == BASE


UP = {**BASE, "category": "upstream"}


@pytest.mark.parametrize("bad", [
    "text", [BASE], {**BASE, "schema_version": 2}, {**BASE, "schema_version": True},
    {k: v for k, v in BASE.items() if k != "schema_version"}, {**BASE, "category": "cosmic-rays"},
    {**BASE, "confidence": "0.9"}, {**BASE, "summary": " "}, {**BASE, "summary": True},
    {k: v for k, v in BASE.items() if k != "summary"}, {**BASE, "reproduced_on_retry": "yes"},
    {**BASE, "evidence": {}}, {**BASE, "evidence": [1]}, {**BASE, "analyzer": []},
    {**BASE, "analyzed_at": "yesterday"}, {**BASE, "suspected_upstream": {"pr": 1}},
    {**UP, "suspected_upstream": {"reason": "r"}}, {**UP, "suspected_upstream": {"pr": "1"}},
    {**UP, "suspected_upstream": {"pr": True}}, {**UP, "suspected_upstream": {"pr": 0}},
    {**UP, "suspected_upstream": {"commit": "xyz1234"}}, {**UP, "suspected_upstream": {"commit": "abc12"}},
    {**BASE, "summary": "x" * 20_000},  # over the 16 KiB cap as a whole
])
def test_structural_violations_drop_the_whole_verdict(bad) -> None:
    assert validate(bad) is None


@pytest.mark.parametrize("url", ["javascript:alert(1)", "https://github.com@evil.com/log",
                                 "https://x.org/a\n[b](https://evil.com)", "https://x.org/a b",
                                 "https:// evil.com", "https://", "/relative/log"])
def test_unsafe_log_urls_drop_the_verdict(url) -> None:
    assert validate({**BASE, "evidence": [{"log_url": url}]}) is None


def test_overflow_is_cut_not_refused() -> None:
    assert len(validate({**BASE, "summary": "x" * 2000})["summary"]) == 1000
    assert len(validate({**BASE, "evidence": [{"excerpt": "x" * 2000}]})["evidence"][0]["excerpt"]) == 1000
    assert len(validate({**BASE, "evidence": [{"job": str(i)} for i in range(15)]})["evidence"]) == 10
    assert validate({**UP, "suspected_upstream": {"commit": "abcdef1"}})["suspected_upstream"] == {
        "commit": "abcdef1"}
    empty = validate({**BASE, "evidence": [{}], "analyzer": {}})
    assert "evidence" not in empty and "analyzer" not in empty


def test_a_plain_http_log_url_is_kept() -> None:
    verdict = {**BASE, "evidence": [{"log_url": "http://ci.example.org/runs/1"}]}
    assert validate(verdict) == verdict


def test_a_verdict_of_exactly_16_kib_is_kept_one_byte_more_is_dropped() -> None:
    raw = {**BASE, "padding": ""}  # an unknown key: counted in the size, then dropped
    raw["padding"] = "x" * (MAX_VERDICT_BYTES - len(json.dumps(raw).encode()))
    assert validate(raw) == BASE
    raw["padding"] += "x"
    assert validate(raw) is None


def test_a_lowercase_z_offset_is_not_iso_8601_here() -> None:
    assert validate({**BASE, "analyzed_at": "2026-01-01T00:00:00+00:00"})["analyzed_at"] == "2026-01-01T00:00:00+00:00"
    assert validate({**BASE, "analyzed_at": "2026-01-01T00:00:00z"}) is None


@pytest.mark.parametrize(("bad", "why"), [
    ("text", "not an object"),
    ({**BASE, "summary": "x" * 20_000}, f"over {MAX_VERDICT_BYTES}"),
    ({**BASE, "summary": " "}, "must not be blank"),
    ({**BASE, "schema_version": True}, "schema_version must be a number"),
    ({**BASE, "evidence": [{"log_url": "https://a@b.org/"}]}, "must be a plain http(s) URL"),
    ({**UP, "suspected_upstream": {"pr": 0}}, "pr must be positive"),
    ({**UP, "suspected_upstream": {"commit": "xyz1234"}}, "hex sha"),
    ({**UP, "suspected_upstream": {"reason": "r"}}, "suspected_upstream must name a pr or a commit"),
    ({**BASE, "suspected_upstream": {"pr": 1}}, "suspected_upstream is only valid for category 'upstream'"),
])
def test_a_dropped_verdict_logs_the_rule_it_broke(bad, why, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="relay.crcr.verdict"):
        assert validate(bad) is None
    assert why in caplog.text
