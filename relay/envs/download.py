"""``pip download`` with progress a caller can show: bytes so far, the total, hence a rate.

pip draws its own bar only on a terminal, and a CLI that captures pip's output (to report a
failure's tail) sees nothing for the minutes a 1 GB torch wheel takes.  pip writes the file
being downloaded under its temporary directory (``$TMPDIR/pip-unpack-*/``) and prints
``Downloading <url> (<size>)`` first; ``run_pip_download`` gives pip a temporary directory of its
own, reads that line for the total, and reports the bytes on disk every ``poll_s`` seconds.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["Progress", "parse_size", "run_pip_download"]

#: ``progress(name, done bytes, total bytes or None)``, called from the calling thread
Progress = Callable[[str, int, int | None], None]
_DOWNLOADING = re.compile(r"Downloading (?P<url>\S+) \((?P<size>[\d.]+ [kMG]?B)\)")
_UNITS = {"B": 1, "kB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3}


def parse_size(text: str) -> int | None:
    """Bytes of pip's size text (``1037.2 MB``: decimal units, as pip prints them), else None."""
    number, _, unit = text.partition(" ")
    try:
        return int(float(number) * _UNITS[unit])
    except (KeyError, ValueError):
        return None


def _on_disk(tmp: Path) -> int:
    return sum(p.stat().st_size for p in tmp.glob("pip-unpack-*/*") if p.is_file())


def run_pip_download(cmd: list[str], progress: Progress, *, poll_s: float = 0.5) -> tuple[int, str]:
    """Run ``cmd`` (a ``pip download``) reporting progress; returns (exit code, its output).
    ``progress`` gets the file name pip announced (``?`` before that), the bytes written so far
    and the announced size; once more with the final size when pip succeeded."""
    with tempfile.TemporaryDirectory(prefix="relay-pip-") as tmp:
        env = {**os.environ, "TMPDIR": tmp}
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
        reader.start()
        name, total, done = "?", None, 0
        while proc.poll() is None:
            found = next((m for line in list(lines) if (m := _DOWNLOADING.search(line))), None)
            if found:
                name, total = found["url"].rsplit("/", 1)[-1], parse_size(found["size"])
            done = max(done, _on_disk(Path(tmp)))
            progress(name, done, total)
            time.sleep(poll_s)
        reader.join(timeout=10)
        if proc.returncode == 0 and total is not None:
            progress(name, total, total)
        return proc.returncode, "".join(lines)
