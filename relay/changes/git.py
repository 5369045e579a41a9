"""The one way the relay runs ``git``: ``git -C <checkout> <args>`` as a subprocess.

Every caller names the error type it raises (``ChangeSourceError``, ``GitRangeError``,
``CommitEnvError``) and the label that starts the message, so a failure reads as the caller's
own, e.g. ``~/pytorch@v2.13.0: git ls-tree failed: fatal: not a tree object``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Literal, overload

__all__ = ["git_run", "git_output", "file_reader"]


def git_run(checkout: str | Path, *args: str, error: type[Exception], label: str,
            text: bool = True) -> subprocess.CompletedProcess:
    """Run ``git -C checkout *args`` and return the finished process whatever its exit status.

    Raises ``error(f"{label}: cannot run git (...)")`` when git cannot be started.
    """
    try:
        return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True,
                              text=text, check=False)
    except OSError as exc:
        raise error(f"{label}: cannot run git ({exc})") from None


@overload
def git_output(checkout: str | Path, *args: str, error: type[Exception], label: str,
               text: Literal[True] = ...) -> str: ...
@overload
def git_output(checkout: str | Path, *args: str, error: type[Exception], label: str,
               text: Literal[False]) -> bytes: ...
def git_output(checkout: str | Path, *args: str, error: type[Exception], label: str,
               text: bool = True) -> str | bytes:
    """The standard output of ``git -C checkout *args``.

    Raises ``error(f"{label}: git <command> failed: <last line of stderr>")`` for a non-zero exit
    and as ``git_run`` when git cannot be started.
    """
    proc = git_run(checkout, *args, error=error, label=label, text=text)
    if proc.returncode != 0:
        stderr = proc.stderr if text else proc.stderr.decode(errors="replace")
        lines = stderr.strip().splitlines()
        raise error(f"{label}: git {args[0]} failed: {lines[-1] if lines else f'exit {proc.returncode}'}")
    return proc.stdout


def file_reader(checkout: str | Path):
    """``read(commit, path)`` → the text of ``path`` at ``commit`` in ``checkout`` (``git show``),
    or ``None`` when the commit or path does not exist there or git cannot run — the shape
    ``selection.attribution.native.SourceReader`` asks for (kernels a native file defines at a commit)."""

    def read(commit: str, path: str) -> str | None:
        try:
            proc = git_run(checkout, "show", f"{commit}:{path}", error=OSError, label=str(checkout))
        except OSError:
            return None
        return proc.stdout if proc.returncode == 0 else None

    return read
