"""A commit range of a local upstream checkout, for ``relay replay A..B --upstream PATH``.

``git_range`` turns ``A..B`` (or one commit ``C``, meaning ``C^..C``) into the ``ChangeSet``
between the two revisions (``relay.changes.build_changeset`` over two ``GitSource``s: changed
files and changed Python symbols) and the commits of the range, oldest → newest along the first
parent (``git rev-list --reverse --first-parent A..B``: every listed commit is a state the
branch was in, which is what bisection needs; commits of merged side branches are not tried).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from relay.changes.builder import build_changeset
from relay.changes.git import git_output
from relay.changes.gitsource import GitSource
from relay.errors import ChangeSourceError, GitRangeError
from selection.models import ChangeSet

__all__ = ["GitRangeError", "GitRange", "git_range", "looks_like_range"]

_RANGE = re.compile(r"^(?P<base>[^\s.][^\s]*?)\.\.(?P<head>[^\s.][^\s]*)$")


@dataclass(frozen=True)
class GitRange:
    """The change of a range and its commits (full shas, oldest first, ending with the head)."""

    changeset: ChangeSet
    commits: list[str]


def looks_like_range(ref: str) -> bool:
    """Whether ``ref`` has the ``A..B`` form (not ``A...B``)."""
    return "..." not in ref and _RANGE.match(ref.strip()) is not None


def _git(checkout: Path, *args: str) -> str:
    return git_output(checkout, *args, error=GitRangeError, label=str(checkout))


def _commit(checkout: Path, rev: str) -> str:
    try:
        return _git(checkout, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    except GitRangeError:
        raise GitRangeError(f"{rev!r} is not a commit in {checkout}") from None


def git_range(checkout: Path, ref: str, *, upstream: str = "pytorch/pytorch") -> GitRange:
    """The ``GitRange`` of ``ref`` (``A..B`` or one commit) in ``checkout``.

    Raises ``GitRangeError`` when the checkout is not a git repository, a side is not a commit,
    or the range holds no commit.
    """
    checkout = Path(checkout)
    if not (checkout / ".git").exists():
        raise GitRangeError(f"{checkout}: not a git checkout")
    m = _RANGE.match(ref.strip())
    if m and "..." not in ref:
        base, head = _commit(checkout, m.group("base")), _commit(checkout, m.group("head"))
    else:
        head = _commit(checkout, ref.strip())
        try:
            base = _commit(checkout, f"{head}^")
        except GitRangeError:
            raise GitRangeError(f"{ref!r} is a root commit: give a range A..B") from None
    commits = _git(checkout, "rev-list", "--reverse", "--first-parent", f"{base}..{head}").split()
    if not commits:
        raise GitRangeError(f"{ref}: no commits between {base[:12]} and {head[:12]} in {checkout}")
    try:
        changeset = build_changeset(GitSource(checkout, base), GitSource(checkout, head),
                                    upstream=upstream, title=f"{ref} in {checkout.name}")
    except ChangeSourceError as exc:
        raise GitRangeError(str(exc)) from None
    return GitRange(changeset=changeset, commits=commits)
