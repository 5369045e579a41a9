"""``GitSource``: the files of one revision of a git repository, read through ``git`` itself.

Listing uses ``git ls-tree -r -l -z <rev>`` (blob ids are the digests, so unchanged files are
never read); contents come from one long-lived ``git cat-file --batch`` process.  Submodule
entries (commits) and symlinks' targets are listed like GitHub does: symlinks as blobs,
submodules skipped.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from relay.changes.git import git_output
from relay.changes.sources import ChangeSourceError, FileEntry, Source


class GitSource(Source):
    """Revision ``rev`` (any ``git rev-parse`` expression) of the repository at ``repo_path``.

    Raises ``ChangeSourceError`` when ``git`` is missing, the path is not a repository or the
    revision does not resolve to a commit.
    """

    def __init__(self, repo_path: str | Path, rev: str) -> None:
        self.repo = Path(repo_path)
        self.rev = rev
        self.label = f"{repo_path}@{rev}"
        self.sha = self._git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").decode().strip()
        self._entries: dict[str, FileEntry] | None = None
        self._batch: subprocess.Popen[bytes] | None = None

    def _git(self, *args: str) -> bytes:
        return git_output(self.repo, *args, error=ChangeSourceError, label=self.label, text=False)

    def entries(self) -> dict[str, FileEntry]:
        if self._entries is None:
            out = self._git("ls-tree", "-r", "-l", "-z", "--full-tree", self.sha)
            entries: dict[str, FileEntry] = {}
            for rec in out.split(b"\0"):
                if not rec:
                    continue
                meta, _, path = rec.partition(b"\t")
                _mode, kind, oid, size = meta.split()
                if kind != b"blob":
                    continue
                entries[path.decode("utf-8", errors="surrogateescape")] = FileEntry(
                    int(size) if size != b"-" else None, "gitblob=" + oid.decode())
            self._entries = entries
        return self._entries

    def read(self, path: str) -> bytes:
        entry = self.entries().get(path)
        if entry is None or entry.digest is None:
            raise ChangeSourceError(f"{self.label}: no such file {path!r}")
        oid = entry.digest.split("=", 1)[1]
        if self._batch is None:
            self._batch = subprocess.Popen(["git", "-C", str(self.repo), "cat-file", "--batch"],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._batch.stdin and self._batch.stdout
        self._batch.stdin.write(oid.encode() + b"\n")
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        if len(header) != 3:
            raise ChangeSourceError(f"{self.label}: cannot read {path!r} ({header!r})")
        data = self._batch.stdout.read(int(header[2]))
        self._batch.stdout.read(1)  # trailing newline
        return data

    def describe(self) -> str:
        return self.sha

    def close(self) -> None:
        if self._batch is not None:
            if self._batch.stdin:
                self._batch.stdin.close()
            self._batch.wait(timeout=10)
            if self._batch.stdout:
                self._batch.stdout.close()
            self._batch = None
