"""A run's raw test output: each pytest process's ``pytest.log`` and ``junit.xml`` under the run
directory ``<state dir>/runs/<run id>/`` (``relay.pipeline.local``: ``attempt-N/`` per attempt,
``base/`` for the baseline, ``reruns/`` for stage 4, one directory per shard), linked from the run
page and served by ``GET /runs/{id}/logs/{path}``.

Only those two file names are served, and only from inside the run's own directory; a run whose
tests ran on other machines (Celery workers) has no files here and its page says so.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["LOG_NAMES", "run_logs", "log_file"]

#: the files of a pytest process the page links (media type of each)
LOG_NAMES = {"pytest.log": "text/plain; charset=utf-8", "junit.xml": "application/xml"}
_RUN_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")


def _run_dir(state_dir: Path, run_id: str) -> Path | None:
    if not _RUN_ID.fullmatch(run_id):
        return None
    found = (Path(state_dir) / "runs" / run_id).resolve()
    return found if found.is_dir() else None


def run_logs(state_dir: Path, run_id: str) -> list[dict[str, str]]:
    """``[{"shard", "name", "path"}]``: every ``pytest.log`` / ``junit.xml`` of the run, sorted by
    shard directory (``attempt-1``, ``base/attempt-1``, …) then name; ``path`` is relative to
    the run directory (what ``log_file`` takes).  Empty when the run has no directory here."""
    root = _run_dir(state_dir, run_id)
    if root is None:
        return []
    found = [p for name in LOG_NAMES for p in root.rglob(name) if p.is_file()]
    rows = [{"shard": p.parent.relative_to(root).as_posix(), "name": p.name,
             "path": p.relative_to(root).as_posix()} for p in found]
    return sorted(rows, key=lambda r: (r["shard"], r["name"] != "pytest.log"))


def log_file(state_dir: Path, run_id: str, path: str) -> tuple[Path, str] | None:
    """``(file, media type)`` of the run's ``path`` when it is a ``pytest.log`` or
    ``junit.xml`` inside the run directory, else ``None`` (unknown run, another name, ``..``)."""
    root = _run_dir(state_dir, run_id)
    if root is None or Path(path).name not in LOG_NAMES:
        return None
    target = (root / path).resolve()
    if not target.is_file() or not target.is_relative_to(root):
        return None
    return target, LOG_NAMES[target.name]
