"""The index capture reports its progress: ``capture_index`` builds the test → aten-op index
chunk by chunk through ``TestOpIndex.build`` (the cache accumulating), counting each chunk, and
ends with the same index one build would give; a warm cache captures nothing and counts
nothing."""

from __future__ import annotations

from pathlib import Path

from relay.pipeline import indexing
from relay.pipeline.indexing import CAPTURE, build_selector, capture_index
from relay.pipeline.ports import Progress
from relay.pipeline.specs import load_items
from selection.index.op_index import TestOpIndex


class Counts(Progress):
    def __init__(self) -> None:
        self.seen: list[tuple[str, int, int]] = []

    def count(self, name: str, done: int, total: int) -> None:
        self.seen.append((name, done, total))


def test_capture_counts_each_chunk_and_matches_one_build(tmp_path: Path, op_db_spec, monkeypatch) -> None:
    monkeypatch.setattr(indexing, "MAX_CHUNKS", 2)  # 2 chunks of at least 10 items
    spec = op_db_spec("idx", ["add", "mul", "softmax", "log_softmax", "nn.functional.gelu", "sub"],
                      exclude=["softmax.with_dtype", "log_softmax.with_dtype"], dtypes=["float16", "float32"],
                      templates=["TestCommon::test_compare_cpu", "TestCommon::test_noncontiguous_samples"])
    items = load_items([spec])
    ops = [i for i in items if i.op is not None]
    assert len(ops) > 10
    counts = Counts()
    index = capture_index(items, device="cpu", cache_dir=tmp_path / "chunked", progress=counts)
    assert counts.seen[0] == (CAPTURE, 0, len(ops)) and counts.seen[-1] == (CAPTURE, len(ops), len(ops))
    assert len(counts.seen) == 1 + 2
    once = TestOpIndex.build(items, device="cpu", cache_dir=tmp_path / "once")
    assert index.entries == once.entries and "aten::_softmax" in index.aten_ops
    warm = Counts()
    again = capture_index(items, device="cpu", cache_dir=tmp_path / "chunked", progress=warm)
    assert warm.seen == [] and again.entries == index.entries
    selector = build_selector(items, profile="spyre-sim", device="cpu", cache_dir=tmp_path / "chunked",
                              progress=warm)
    assert selector.index.entries == index.entries and warm.seen == []
