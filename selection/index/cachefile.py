"""Writing a cache file atomically: readers see the old file or the new one, never half of one.

Every cache of the repository memory (indexes, source maps, support answers) and the relay's
universe cache are written this way.  The temporary file gets a name of its own per write
(``tempfile``, in the target's directory so ``os.replace`` stays on one filesystem): a fixed
``.tmp`` name, or one per process, let two threads (the relay's two workers on a cold cache)
or two processes rename each other's file away — ``FileNotFoundError`` on the second rename.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text is UTF-8) to ``path``, creating its directory; the last writer of
    concurrent ones wins.  Raises ``OSError`` from the filesystem."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(raw)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
