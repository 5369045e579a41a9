"""Where the files of one side of a change come from: a wheel, an extracted tree, a git revision.

A ``Source`` lists its files as ``{path: FileEntry(size, digest)}`` (POSIX paths relative to the
install root / repository root) and reads the bytes of one path.  Digests are ``"algo=value"``
strings; two entries are compared by digest only when both use the same algorithm, otherwise the
builder falls back to ``Source.sha256`` (see ``same_content``).

What is listed (decided here, documented in ``examples/changes/README.md``):

* wheels: every zip member except directory entries, anything under ``*.dist-info/`` (RECORD,
  METADATA, WHEEL … always differ between versions) and ``*.data/<scheme>/`` (scripts, headers,
  data; ``purelib`` / ``platlib`` members are mapped to the path they install to).  Digests come
  from RECORD (``sha256=<urlsafe-b64>``) so nothing is decompressed to find changed files; a
  member without a RECORD hash is hashed from its content.
* trees: every regular file below the directory except ``*.dist-info/`` and ``*.data/``
  directories, ``__pycache__/`` directories, ``*.pyc`` files and a ``.git/`` directory.  Digests
  are computed lazily (only for same-size pairs).
* git (``GitSource``): the blobs of ``git ls-tree -r <rev>``; digests are git blob ids.
"""

from __future__ import annotations

import base64
import csv
import email.parser
import hashlib
import io
import os
import re
import zipfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from relay.errors import ChangeSourceError

_DIST_INFO = re.compile(r"^[^/]+\.dist-info/")
_DATA = re.compile(r"^[^/]+\.data/([^/]+)/(.*)$")
_SKIP_DIRS = {"__pycache__", ".git"}


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One listed file: its size in bytes (``None`` if unknown) and ``"algo=value"`` digest
    (``None`` = compute on demand with ``Source.sha256``)."""

    size: int | None
    digest: str | None = None


def sha256_digest(data: bytes) -> str:
    """The RECORD-style digest of ``data``: ``"sha256=" + urlsafe base64 without padding``."""
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


class Source(ABC):
    """One side of a change.  Subclasses implement ``entries``, ``read`` and ``describe``."""

    #: human label used in error messages and notes (the path, or ``repo@rev``)
    label: str

    @abstractmethod
    def entries(self) -> dict[str, FileEntry]:
        """All listed files, ``{posix_path: FileEntry}``.  Raises ``ChangeSourceError``."""

    @abstractmethod
    def read(self, path: str) -> bytes:
        """The bytes of one listed path.  Raises ``ChangeSourceError`` if it cannot be read."""

    @abstractmethod
    def describe(self) -> str:
        """A version label for ``ChangeSet.base/head``, e.g. ``torch==2.13.0`` or a dir name."""

    def sha256(self, path: str) -> str:
        """The ``sha256=`` digest of one path's content (RECORD format)."""
        entry = self.entries().get(path)
        if entry is not None and entry.digest and entry.digest.startswith("sha256="):
            return entry.digest
        return sha256_digest(self.read(path))

    def close(self) -> None:  # noqa: B027 - optional hook: most sources hold no handles
        """Release open handles (zip files, git processes).  Idempotent."""

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def same_content(a: Source, pa: str, ea: FileEntry, b: Source, pb: str, eb: FileEntry) -> bool:
    """Whether two listed files have identical bytes, hashing only when sizes/digests can't tell."""
    if ea.size is not None and eb.size is not None and ea.size != eb.size:
        return False
    if ea.digest and eb.digest and ea.digest.split("=", 1)[0] == eb.digest.split("=", 1)[0]:
        return ea.digest == eb.digest
    return a.sha256(pa) == b.sha256(pb)


def _version_label(metadata: bytes, fallback: str, keep_local: bool) -> str:
    msg = email.parser.BytesHeaderParser().parsebytes(metadata)
    name, version = msg.get("Name"), msg.get("Version")
    if not name or not version:
        return fallback
    if not keep_local:
        version = version.split("+", 1)[0]
    return f"{name.strip().lower()}=={version.strip()}"


def _install_path(name: str) -> str | None:
    """Map an archive member name to the path it installs to, ``None`` for skipped members."""
    if name.endswith("/") or _DIST_INFO.match(name):
        return None
    m = _DATA.match(name)
    if m:
        return m.group(2) if m.group(1) in ("purelib", "platlib") and m.group(2) else None
    return name


class WheelSource(Source):
    """A wheel (zip) file.  Members are listed by their install path; digests from RECORD."""

    def __init__(self, path: str | Path, *, keep_local: bool = False) -> None:
        self.path = Path(path)
        self.label = str(path)
        self.keep_local = keep_local
        try:
            self._zip = zipfile.ZipFile(self.path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise ChangeSourceError(f"{self.path}: not a readable wheel/zip file ({exc})") from exc
        self._entries: dict[str, FileEntry] | None = None
        self._member: dict[str, str] = {}

    def _dist_info_file(self, suffix: str) -> str | None:
        hits = sorted(n for n in self._zip.namelist() if _DIST_INFO.match(n) and n.count("/") == 1
                      and n.endswith("/" + suffix))
        return hits[0] if hits else None

    def _record(self) -> dict[str, str]:
        name = self._dist_info_file("RECORD")
        if name is None:
            return {}
        text = self._zip.read(name).decode("utf-8", errors="replace")
        hashes: dict[str, str] = {}
        for row in csv.reader(io.StringIO(text)):
            if len(row) >= 2 and row[1].startswith("sha256="):
                hashes[row[0]] = row[1]
        return hashes

    def entries(self) -> dict[str, FileEntry]:
        if self._entries is None:
            record = self._record()
            entries: dict[str, FileEntry] = {}
            for info in self._zip.infolist():
                target = _install_path(info.filename)
                if target is None:
                    continue
                self._member[target] = info.filename
                entries[target] = FileEntry(info.file_size, record.get(info.filename))
            self._entries = entries
        return self._entries

    def read(self, path: str) -> bytes:
        self.entries()
        try:
            return self._zip.read(self._member[path])
        except (KeyError, OSError, zipfile.BadZipFile, RuntimeError) as exc:
            raise ChangeSourceError(f"{self.path}: cannot read member {path!r} ({exc})") from exc

    def describe(self) -> str:
        name = self._dist_info_file("METADATA")
        if name is None:
            return self.path.name
        return _version_label(self._zip.read(name), self.path.name, self.keep_local)

    def close(self) -> None:
        self._zip.close()


class TreeSource(Source):
    """An extracted tree (e.g. an unzipped wheel or a site-packages-like directory)."""

    def __init__(self, path: str | Path, *, keep_local: bool = False) -> None:
        self.path = Path(path)
        self.label = str(path)
        self.keep_local = keep_local
        if not self.path.is_dir():
            raise ChangeSourceError(f"{self.path}: not a directory")
        self._entries: dict[str, FileEntry] | None = None
        self._digests: dict[str, str] = {}

    def entries(self) -> dict[str, FileEntry]:
        if self._entries is None:
            entries: dict[str, FileEntry] = {}
            root = str(self.path)

            def onerror(exc: OSError) -> None:
                raise ChangeSourceError(f"{self.path}: cannot list {exc.filename} ({exc})")

            for dirpath, dirnames, filenames in os.walk(root, onerror=onerror):
                rel_dir = os.path.relpath(dirpath, root)
                rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
                dirnames[:] = sorted(
                    d for d in dirnames if d not in _SKIP_DIRS
                    and not (rel_dir == "" and (d.endswith(".dist-info") or d.endswith(".data"))))
                for fn in filenames:
                    if fn.endswith(".pyc"):
                        continue
                    full = os.path.join(dirpath, fn)
                    try:
                        st = os.stat(full)
                    except OSError:
                        continue  # dangling symlink
                    if os.path.isfile(full):
                        entries[rel_dir + fn] = FileEntry(st.st_size, None)
            self._entries = entries
        return self._entries

    def read(self, path: str) -> bytes:
        try:
            return (self.path / path).read_bytes()
        except OSError as exc:
            raise ChangeSourceError(f"{self.path}: cannot read {path!r} ({exc})") from exc

    def sha256(self, path: str) -> str:
        if path not in self._digests:
            try:
                with open(self.path / path, "rb") as fh:
                    raw = hashlib.file_digest(fh, "sha256").digest()
            except OSError as exc:
                raise ChangeSourceError(f"{self.path}: cannot read {path!r} ({exc})") from exc
            self._digests[path] = "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        return self._digests[path]

    def describe(self) -> str:
        metas = sorted(self.path.glob("*.dist-info/METADATA"))
        if metas:
            try:
                return _version_label(metas[0].read_bytes(), self.path.name, self.keep_local)
            except OSError:
                pass
        return self.path.resolve().name
