"""Building the ``Selector`` with its index capture visible: a count with an ETA instead of
minutes of silence on the first run (about 5 ms per OpInfo item: 8,200 items ≈ 1–5 min).

``selection.index.op_index.TestOpIndex.build`` captures every uncached item in one call and reports
nothing while it works.  ``capture_index`` uses only that public call: it loads the cache
(``build`` of no items), then builds the missing items chunk by chunk — each call captures its
chunk and saves the cache — and reports ``Progress.count`` after each chunk.  The price is one
cache read and write per chunk (at most ``MAX_CHUNKS`` chunks; about 20 ms each for an 8,000-entry
cache).  When selection reports progress itself, this module reduces to passing the callback on.

``build_selector`` holds ``INDEX_LOCK`` for the whole construction: the index, generator and
source-map caches are written through one temporary file name each, so two runs of the
in-process pool must not build them at the same time (another process can still; the caches are
then rebuilt, never corrupted for the reader, which skips an unreadable cache).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from relay.changes.git import file_reader
from relay.pipeline.ports import Progress
from selection.attribution.native import NativeDefinitions
from selection.index.op_index import TestOpIndex
from selection.pipeline import Selector
from test_specs.values.items import SpecItem

__all__ = ["build_selector", "capture_index", "INDEX_LOCK", "MAX_CHUNKS", "CAPTURE"]

#: held while a ``Selector`` (and its caches) is built in this process
INDEX_LOCK = threading.Lock()
#: the most chunks a capture is split into (each costs one cache read and write)
MAX_CHUNKS = 100
#: the ``Progress.count`` name of the index capture
CAPTURE = "capturing the test → aten-op index"


def _chunks(items: Sequence[SpecItem]) -> list[Sequence[SpecItem]]:
    size = max(10, -(-len(items) // MAX_CHUNKS))
    return [items[i:i + size] for i in range(0, len(items), size)]


def capture_index(items: Sequence[SpecItem], *, device: str, cache_dir: Path | None,
                  progress: Progress) -> TestOpIndex:
    """The test → aten-op index of ``items`` on ``device`` (as ``TestOpIndex.build``), reporting
    ``progress.count(CAPTURE, done, total)`` over the items not in the cache yet.  Without a
    cache directory the chunks could not accumulate: one silent ``build``."""
    if cache_dir is None:
        return TestOpIndex.build(items, device=device, cache_dir=None)
    index = TestOpIndex.build([], device=device, cache_dir=cache_dir)  # the cache, nothing captured
    missing = [i for i in items if (i.op is not None or i.module is not None)
               and i.id not in index.entries and i.id not in index.failures]
    if not missing:
        return index
    done = 0
    progress.count(CAPTURE, 0, len(missing))
    for chunk in _chunks(missing):
        index = TestOpIndex.build(chunk, device=device, cache_dir=cache_dir)
        done += len(chunk)
        progress.count(CAPTURE, done, len(missing))
    return index


def build_selector(items: Sequence[SpecItem], *, profile: str, device: str = "spyre",
                   cache_dir: Path | None, progress: Progress,
                   source_root: Path | None = None, upstream_checkout: Path | None = None) -> Selector:
    """A ``Selector`` over ``items`` (stages 1–3), its index captured by ``capture_index``;
    with ``upstream_checkout`` (a PyTorch git checkout) native files without a patch are
    attributed to the kernels they define at the change's head (read with ``git show``,
    cached per commit in ``cache_dir``).
    Raises ``KeyError`` for an unknown backend ``profile`` (``selection.policy.profile``)."""
    definitions = None
    if upstream_checkout is not None:
        definitions = NativeDefinitions(file_reader(upstream_checkout), cache_dir)
    with INDEX_LOCK:
        index = capture_index(items, device=device, cache_dir=cache_dir, progress=progress)
        return Selector(items, profile=profile, index_device=device, cache_dir=cache_dir,
                        source_root=source_root, index=index, definitions=definitions)
