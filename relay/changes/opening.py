"""Opening a change source from what a user typed: a wheel, a directory, or ``REPO@REV``."""

from __future__ import annotations

import zipfile
from pathlib import Path

from relay.changes.gitsource import GitSource
from relay.changes.sources import Source, TreeSource, WheelSource
from relay.errors import ChangeSourceError

__all__ = ["open_source", "describe_source"]


def open_source(spec: str | Path | Source, *, keep_local: bool = False) -> Source:
    """Open ``spec``: a ``Source`` (returned as-is), a wheel/zip file, a directory, or
    ``REPO@REV`` (a git work tree or bare repo and a revision, e.g. ``~/pytorch@v2.13.0``).

    Raises ``ChangeSourceError`` (message starts with the path) when the path is missing or is
    neither a zip file, a directory nor a ``REPO@REV`` of an existing git repository.
    """
    if isinstance(spec, Source):
        return spec
    path = Path(spec).expanduser()
    if path.is_dir():
        return TreeSource(path, keep_local=keep_local)
    if path.is_file():
        if not zipfile.is_zipfile(path):
            raise ChangeSourceError(f"{path}: not a wheel (zip) file or a directory")
        return WheelSource(path, keep_local=keep_local)
    text = str(spec)
    if "@" in text:
        repo, rev = text.rsplit("@", 1)
        if repo and rev and Path(repo).expanduser().is_dir():
            return GitSource(Path(repo).expanduser(), rev)
    raise ChangeSourceError(f"{spec}: no such file or directory (expected a wheel, a directory "
                            "or REPO@REV)")


def describe_source(spec: str | Path | Source, *, keep_local: bool = False) -> str:
    """A version label for one source: ``name==version`` from ``*.dist-info/METADATA`` (the
    ``+local`` segment such as ``+cpu`` dropped unless ``keep_local``), else the directory or file
    name; for ``REPO@REV`` the full commit sha.  Raises ``ChangeSourceError`` like ``open_source``.
    """
    src = open_source(spec, keep_local=keep_local)
    try:
        return src.describe()
    finally:
        if src is not spec:
            src.close()
