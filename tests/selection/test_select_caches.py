"""The caches that keep ``relay select`` from importing torch (issue 13): the universe of spec
items, keyed by everything its expansion reads, and the Spyre op support answers."""

from __future__ import annotations

from pathlib import Path

import pytest

import test_specs.expand.universe
from relay.pipeline.specs import load_items
from relay.pipeline.universe import universe_key
from selection.index.support import SupportAnswers

SPEC = """\
test_suite_config:
  files:
    - source: op_db
      unlisted_test_mode: skip
      tests:
        - names: [TestCommon::test_compare_cpu]
          edits:
            ops:
              include: [{name: add}, {name: mul}]
"""


def test_the_universe_is_expanded_once_then_read_from_the_cache(tmp_path: Path, monkeypatch) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    first = load_items([spec], cache_dir=tmp_path / "cache")
    assert {i.op for i in first} == {"add", "mul"}
    assert len(list((tmp_path / "cache").glob("universe-*.json"))) == 1

    def no_expansion(*args, **kwargs):
        raise AssertionError("expanded again although the universe is cached")

    monkeypatch.setattr(test_specs.expand.universe, "expand", no_expansion)
    assert load_items([spec], cache_dir=tmp_path / "cache") == first
    key = universe_key([spec])
    spec.write_text(SPEC.replace("{name: mul}", "{name: sub}"))  # another spec: another key
    assert universe_key([spec]) != key
    with pytest.raises(AssertionError, match="expanded again"):
        load_items([spec], cache_dir=tmp_path / "cache")


def test_support_answers_match_the_table_and_are_cached(tmp_path: Path) -> None:
    from spyre_backend.support import SUPPORTED_DTYPES, unsupported_reason

    ops, dtypes = ["aten::add", "aten::_index_put_impl_", "aten::no_such_op"], ["float16", "float64"]
    answers = SupportAnswers.load(ops, dtypes, tmp_path)
    assert answers.dtypes == tuple(SUPPORTED_DTYPES)
    for op in ops:
        for dt in dtypes:
            assert answers.unsupported_reason(op, dt) == unsupported_reason(op, dt)
    assert answers.unsupported_reason("aten::mul", "bfloat16") == unsupported_reason("aten::mul", "bfloat16")
    cached = SupportAnswers.load(ops[:2], dtypes, tmp_path)  # a subset: from the file
    assert (cached.reasons, cached.known) == (answers.reasons, answers.known)
    assert len(list(tmp_path.glob("spyre_support-*.json"))) == 1
