"""Build a ``ChangeSet`` from two sources (wheels, extracted trees or git revisions).

Files are compared by size and digest (RECORD hashes for wheels, blob ids for git), so only
changed Python files are ever decompressed and parsed.  Output carries file names and symbols
only — never file content (``patch`` stays ``None``).
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from relay.changes.opening import open_source
from relay.changes.sources import Source, same_content
from relay.changes.symbols import SymbolError, changed_symbols
from selection.models import ChangedFile, ChangeSet

log = logging.getLogger(__name__)

PYTHON_SUFFIXES = (".py", ".pyi")
#: below this much Python source to parse, stay in-process (a pool costs ~0.1 s to start)
_PARALLEL_MIN_BYTES = 4_000_000


@dataclass
class ChangeReport:
    """A ``ChangeSet`` plus what building it noticed: ``notes`` (e.g. unparsable files),
    ``counts`` per status and ``seconds`` per phase."""

    changeset: ChangeSet
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _symbols_job(job: tuple[str, bytes | None, bytes | None]) -> tuple[str, list[str] | None, str]:
    path, old, new = job
    try:
        return path, changed_symbols(old, new), ""
    except SymbolError as exc:
        return path, None, f"{path}: symbols not computed ({exc})"
    except Exception as exc:  # noqa: BLE001 - a bad file must never abort the change set
        return path, None, f"{path}: symbols not computed ({type(exc).__name__}: {exc})"


def _workers(jobs: int | None, total_bytes: int) -> int:
    if jobs is not None:
        return max(1, jobs)
    if total_bytes < _PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else (os.cpu_count() or 1)))


def diff_sources(src_from: str | Path | Source, src_to: str | Path | Source, *,
                 upstream: str = "pytorch/pytorch", title: str = "",
                 jobs: int | None = None) -> ChangeReport:
    """Compare two sources and return the ``ChangeSet`` with notes, counts and timings.

    ``src_from`` / ``src_to``: a wheel path, a directory, ``REPO@REV`` or a ``Source``.
    ``jobs``: processes for AST work (default: one per CPU when there is much to parse).
    ``base`` / ``head`` come from ``Source.describe()`` (``torch==2.13.0`` for a wheel).
    Files are sorted by name with status ``added`` / ``removed`` / ``modified``; ``symbols`` is
    set for ``.py`` / ``.pyi`` files (``None`` with a note when a side does not parse) and
    ``None`` for every other file.
    Raises ``ChangeSourceError`` for a missing/unsupported/unreadable source.
    """
    t0 = time.perf_counter()
    a = open_source(src_from)
    try:
        b = open_source(src_to)
    except BaseException:
        if a is not src_from:
            a.close()
        raise
    try:
        ea, eb = a.entries(), b.entries()
        base, head = a.describe(), b.describe()
        t1 = time.perf_counter()
        status: dict[str, str] = {}
        for path in ea.keys() | eb.keys():
            if path not in eb:
                status[path] = "removed"
            elif path not in ea:
                status[path] = "added"
            elif not same_content(a, path, ea[path], b, path, eb[path]):
                status[path] = "modified"
        t2 = time.perf_counter()

        py_jobs = []
        for path, st in status.items():
            if path.endswith(PYTHON_SUFFIXES):
                old = a.read(path) if st != "added" else None
                new = b.read(path) if st != "removed" else None
                py_jobs.append((path, old, new))
        t3 = time.perf_counter()
        total = sum(len(o or b"") + len(n or b"") for _, o, n in py_jobs)
        workers = _workers(jobs, total)
        symbols: dict[str, list[str] | None] = {}
        notes: list[str] = []
        # biggest first so one huge file (common_methods_invocations.py) does not finish last
        py_jobs.sort(key=lambda j: -(len(j[1] or b"") + len(j[2] or b"")))
        if workers > 1 and len(py_jobs) > 1:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                results = list(pool.map(_symbols_job, py_jobs, chunksize=8))
        else:
            results = [_symbols_job(j) for j in py_jobs]
        for path, syms, note in results:
            symbols[path] = syms
            if note:
                notes.append(note)
        t4 = time.perf_counter()
    finally:
        for src, spec in ((a, src_from), (b, src_to)):
            if src is not spec:
                src.close()

    files = [ChangedFile(filename=p, status=status[p], symbols=symbols.get(p))  # type: ignore[arg-type]
             for p in sorted(status)]
    changeset = ChangeSet(upstream=upstream, base=base, head=head, title=title, files=files)
    counts = {s: sum(1 for v in status.values() if v == s) for s in ("added", "removed", "modified")}
    counts["python_with_symbols"] = sum(1 for v in symbols.values() if v)
    counts["python_unparsed"] = sum(1 for v in symbols.values() if v is None)
    notes.sort()
    for note in notes:
        log.warning("%s", note)
    return ChangeReport(changeset, notes, counts, {
        "list": round(t1 - t0, 3), "compare": round(t2 - t1, 3), "read": round(t3 - t2, 3),
        "symbols": round(t4 - t3, 3), "total": round(time.perf_counter() - t0, 3),
        "workers": workers})


def build_changeset(src_from: str | Path | Source, src_to: str | Path | Source, *,
                    upstream: str = "pytorch/pytorch", title: str = "") -> ChangeSet:
    """The ``ChangeSet`` from ``src_from`` to ``src_to`` (see ``diff_sources``; notes about
    unparsable files go to the ``relay.changes.builder`` logger as warnings).

    Raises ``ChangeSourceError`` (a ``ValueError`` whose message starts with the offending path)
    when a source is missing, not a wheel/directory/``REPO@REV``, or unreadable.
    """
    return diff_sources(src_from, src_to, upstream=upstream, title=title).changeset
