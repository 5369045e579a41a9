"""The patches of a pushed range, so a ``push`` selects what the same change as a PR selects.

A ``push`` payload lists changed paths per commit but no patch text; without hunks selection can
only attribute a file as a whole (``SoftMax.cpp`` + ``torch/_refs/__init__.py`` as a push kept
6,638 of 8,201 tests; the same change as a PR with patches, 58).  GitHub's REST API gives the
patches (GitHub REST docs, "Compare two commits" and "Get a commit"):

* ``GET /repos/{owner}/{repo}/compare/{base}...{head}`` lists the changed files of the range with
  ``patch`` — at most ``COMPARE_FILES_CAP`` (300) files; a longer list is cut silently.
* For a cut list, ``GET /repos/{owner}/{repo}/commits/{sha}`` of every commit of the range (the
  commits come from the compare API, paged): each commit's files with ``patch``, paged by
  ``Link`` up to 3,000 files.  The per-commit patches of one path are concatenated in commit
  order (hunks of several commits; attribution reads names from hunks, not line numbers), and a
  path's status composes as in ``relay.github.events.push_changeset``.  The ChangeSet's
  ``notes`` say which source was used, so every selection reason can carry it.

Nothing here raises for GitHub trouble: ``with_patches`` returns the ChangeSet it was given plus a
note saying the patches are unknown (selection then attributes whole files, fail soft).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from relay.errors import GitHubAPIError
from relay.github.client import GitHubClient
from selection.models import ChangedFile, ChangeSet

__all__ = ["COMPARE_FILES_CAP", "RangeFiles", "range_files", "merge_commit_files", "with_patches",
           "changeset_from_compare"]

log = logging.getLogger(__name__)

#: GitHub's compare API lists at most this many files (GitHub REST docs, "Compare two commits").
COMPARE_FILES_CAP = 300


@dataclass(frozen=True)
class RangeFiles:
    """The changed files of a range and ``notes`` on how they were read."""

    files: list[ChangedFile]
    notes: list[str]


def merge_commit_files(per_commit: Iterable[list[ChangedFile]]) -> list[ChangedFile]:
    """One ``ChangedFile`` per path from per-commit file lists (oldest commit first), sorted by path.

    Status: ``added`` stays ``added`` when modified later; added then removed drops the path;
    otherwise the last commit's status wins.  ``patch``: the commits' patches joined in order
    (``None`` when no commit carried one).  ``previous_filename``: the first rename's.
    """
    merged: dict[str, ChangedFile] = {}
    for files in per_commit:
        for f in files:
            old = merged.get(f.filename)
            if old is None:
                merged[f.filename] = f.model_copy(update={"symbols": None})
                continue
            if f.status == "removed" and old.status == "added":
                del merged[f.filename]
                continue
            status = "added" if old.status == "added" and f.status != "removed" else f.status
            patches = [p for p in (old.patch, f.patch) if p]
            merged[f.filename] = old.model_copy(update={
                "status": status, "patch": "\n".join(patches) if patches else None,
                "previous_filename": old.previous_filename or f.previous_filename})
    return [merged[k] for k in sorted(merged)]


def _commit_files(github: GitHubClient, repo: str, sha: str) -> list[ChangedFile]:
    files: list[ChangedFile] = []
    for page in github.pages(f"/repos/{repo}/commits/{sha}"):
        files.extend(ChangedFile.model_validate(item) for item in page.get("files", []))
    return files


def range_files(github: GitHubClient, repo: str, base: str, head: str) -> RangeFiles:
    """The changed files of ``base...head`` with patches (see the module docstring).

    Raises ``GitHubAPIError`` when the compare API fails, or when the list is cut and the
    range's commits cannot be listed or read."""
    files = github.compare(repo, base, head)
    if len(files) < COMPARE_FILES_CAP:
        return RangeFiles(files, [f"patches from GitHub's compare API ({base[:12]}...{head[:12]}, "
                                  f"{len(files)} files)"])
    shas = github.compare_commits(repo, base, head)
    if not shas:
        raise GitHubAPIError(0, f"/repos/{repo}/compare/{base}...{head}",
                             f"the compare API lists {COMPARE_FILES_CAP} files (its cap) and the "
                             "range's commits could not be listed")
    merged = merge_commit_files(_commit_files(github, repo, sha) for sha in shas)
    return RangeFiles(merged, [
        f"the compare API lists at most {COMPARE_FILES_CAP} files; patches read per commit from "
        f"GET /repos/{repo}/commits/{{sha}} ({len(shas)} commits, {len(merged)} files)"])


def with_patches(changeset: ChangeSet, github: GitHubClient) -> ChangeSet:
    """``changeset`` (a push's, file names only) with the range's files and patches from GitHub;
    on a GitHub failure the same ``changeset`` with a note that patches are unknown."""
    try:
        found = range_files(github, changeset.upstream, changeset.base, changeset.head)
    except GitHubAPIError as exc:
        log.warning("no patches for %s...%s: %s", changeset.base, changeset.head, exc)
        note = f"no patches (GitHub: {exc}); changed files attributed by name only"
        return changeset.model_copy(update={"notes": [*changeset.notes, note]})
    return changeset.model_copy(update={"files": found.files, "notes": [*changeset.notes, *found.notes]})


def changeset_from_compare(github: GitHubClient, repo: str, base: str, head: str) -> ChangeSet:
    """A ChangeSet of ``base..head`` in ``repo`` read from GitHub (no checkout needed).
    Raises ``GitHubAPIError``."""
    found = range_files(github, repo, base, head)
    return ChangeSet(upstream=repo, base=base, head=head, title=f"{base[:12]}..{head[:12]}",
                     files=found.files, notes=found.notes)
