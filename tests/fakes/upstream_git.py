"""A fake upstream git repository with a simulated regression committed in it.

``make_upstream(path, n, bad=k)`` runs real ``git``: a root commit (the push's ``before``)
holding ``aten/src/ATen/native/SoftMax.cpp`` and a README, then ``n`` commits each adding
``docs/note-<i>.md``; commit ``k`` (0-based among the ``n``) also edits ``SoftMax.cpp`` and adds
``.spyre-sim-faults`` with ``faults`` — what ``relay.envs.commits.GitFaultsResolver`` reads.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Upstream", "make_upstream", "git"]

SOFTMAX = "aten/src/ATen/native/SoftMax.cpp"
FAULTS_FILE = ".spyre-sim-faults"
_ENV = {"GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Test Committer", "GIT_COMMITTER_EMAIL": "committer@example.com",
        "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


def git(repo: Path, *args: str) -> str:
    """Run ``git -C repo args`` with a fixed identity; returns stdout (raises on failure)."""
    env = {**os.environ, **_ENV}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout


@dataclass(frozen=True)
class Upstream:
    """The repository, its root commit (``before``), the ``n`` commits oldest first, and the
    files each commit added / modified (push payload shape)."""

    path: Path
    root: str
    commits: list[str]
    changes: list[dict[str, list[str]]]

    def push_commits(self) -> list[dict[str, Any]]:
        """``commits[]`` entries of a push payload for the ``n`` commits."""
        return [{"id": sha, "message": f"commit {i}", **c}
                for i, (sha, c) in enumerate(zip(self.commits, self.changes, strict=True))]


def _commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def make_upstream(path: Path, n: int = 16, *, bad: int | None = None,
                  faults: str = "aten::_softmax:offset=0.05") -> Upstream:
    """Build the repository at ``path`` (see the module docstring)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / SOFTMAX).parent.mkdir(parents=True)
    (path / SOFTMAX).write_text("// softmax kernels\nint softmax_version = 0;\n")
    (path / "README.md").write_text("fake upstream\n")
    root = _commit(path, "root")
    (path / "docs").mkdir()
    commits, changes = [], []
    for i in range(n):
        (path / "docs" / f"note-{i}.md").write_text(f"note {i}\n")
        change: dict[str, list[str]] = {"added": [f"docs/note-{i}.md"], "removed": [], "modified": []}
        if i == bad:
            (path / SOFTMAX).write_text("// softmax kernels\nint softmax_version = 1;  // faster\n")
            (path / FAULTS_FILE).write_text(f"# simulated regression\n{faults}\n")
            change["added"].append(FAULTS_FILE)
            change["modified"].append(SOFTMAX)
        commits.append(_commit(path, f"commit {i}"))
        changes.append(change)
    return Upstream(path=path, root=root, commits=commits, changes=changes)
