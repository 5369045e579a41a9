"""The test → aten-op index shipped with the package (issues 28 and 29): the bundled specs'
entries for the pinned torch, so the first ``relay select`` on a fresh state directory does not
capture.

``selection/index/data/op_index-<device>.json.gz`` holds ``{"format": capture format, "torch":
version, "device": device, "entries": {test id: [aten ops]}, "failures": {test id: why}}``.
Entries are keyed per item — the test id, under the file's torch version and capture format —
not by spec content: a spec that changes an item's mode keeps its id and its entry; a new item
has no entry and is captured where it is needed.  A file for another torch or capture format
gives nothing (every entry would be stale).  Written by ``python -m selection.index.regenerate``.
"""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

from selection.index.cachefile import write_atomic

log = logging.getLogger(__name__)

DATA = Path(__file__).parent / "data"


def data_path(device: str) -> Path:
    """The shipped index file of ``device`` (``spyre`` or ``cpu``)."""
    return DATA / f"op_index-{device}.json.gz"


def read_shipped(device: str, torch: str, fmt: int,
                 path: Path | None = None) -> tuple[dict[str, list[str]], dict[str, str]]:
    """(entries, failures) of the shipped index for ``torch`` and capture format ``fmt``
    (``op_index.CAPTURE_FORMAT``); ``({}, {})`` when the file is absent, unreadable (logged) or
    for another torch or format."""
    path = path or data_path(device)
    if not path.exists():
        return {}, {}
    try:
        doc = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable shipped index %s: %s", path, exc)
        return {}, {}
    if doc.get("format") != fmt or doc.get("torch") != torch or doc.get("device") != device:
        return {}, {}
    return dict(doc.get("entries", {})), dict(doc.get("failures", {}))


def write_shipped(device: str, torch: str, fmt: int, entries: dict[str, list[str]],
                  failures: dict[str, str], path: Path | None = None) -> Path:
    """Write the shipped index (sorted keys, gzip with a fixed mtime: the same entries give the
    same bytes)."""
    path = path or data_path(device)
    doc = {"format": fmt, "torch": torch, "device": device,
           "entries": {k: entries[k] for k in sorted(entries)}, "failures": {k: failures[k] for k in sorted(failures)}}
    write_atomic(path, gzip.compress(json.dumps(doc, sort_keys=True).encode(), mtime=0))
    return path
