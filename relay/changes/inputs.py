"""Read what users hand the CLI: a change (a ChangeSet file, ``git diff`` output, or GitHub's
PR-files JSON array) and spec paths (files or directories).  Every failure is an ``InputError``
whose message names the source (and the line or JSON location, e.g. ``[3].filename``),
ready to print without a traceback.

``read_change`` tells the kinds apart by content (``relay replay FILE``, ``relay select FILE``):
a JSON object is a ChangeSet (or GitHub's compare API answer), a JSON array is PR files, text
with ``diff --git`` or ``---``/``+++`` file headers is a unified diff; anything else is refused
with a hint naming ``relay changes`` (``CHANGES_HINT``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from relay.errors import InputError
from selection.models import ChangedFile, ChangeSet


def _read(source: str) -> tuple[str, str]:
    """(text, display name); ``-`` reads standard input."""
    if source == "-":
        import sys

        return sys.stdin.read(), "<stdin>"
    path = Path(source)
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except FileNotFoundError:
        raise InputError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{source}: cannot read: {exc}") from None


def _json(text: str, name: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"{name}: JSON nests too deeply to be a change file") from None


def json_location(loc: Sequence[str | int]) -> str:
    """A pydantic error location, dotted as pydantic prints it (``("files", 3, "filename")`` →
    ``files.3.filename``), except that an index into a top-level array reads ``[3]``
    (``(3, "filename")`` → ``[3].filename``); the empty location is ``<root>``."""
    if not loc:
        return "<root>"
    head, *rest = loc
    first = f"[{head}]" if isinstance(head, int) else str(head)
    return ".".join([first, *(str(p) for p in rest)])


def _validation(name: str, exc: ValidationError, at: tuple[str | int, ...] = ()) -> InputError:
    first = exc.errors()[0]
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return InputError(f"{name}: {json_location((*at, *first['loc']))}: {first['msg']}{more}")


_JSON_TYPES = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
               type(None): "null"}


def load_changeset(source: str) -> ChangeSet:
    """A ChangeSet from a JSON file in the design §4 shape (``-`` = stdin)."""
    text, name = _read(source)
    data = _json(text, name)
    try:
        return ChangeSet.model_validate(data)
    except ValidationError as exc:
        raise _validation(name, exc) from None


def _pr_files(data: object, name: str, base: str, head: str) -> ChangeSet:
    if not isinstance(data, list):
        raise InputError(f"{name}: expected a JSON array of PR files (GitHub's PR-files API shape)")
    files = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise InputError(f"{name}: [{i}]: expected an object (a PR file), got "
                             f"{_JSON_TYPES.get(type(entry), type(entry).__name__)}")
        try:
            files.append(ChangedFile.model_validate(entry))
        except ValidationError as exc:
            raise _validation(name, exc, (i,)) from None
    return ChangeSet(base=base, head=head, files=files)


def changeset_from_pr_files(source: str, *, base: str = "unknown", head: str = "unknown") -> ChangeSet:
    """A ChangeSet from GitHub's ``GET /repos/{o}/{r}/pulls/{n}/files`` JSON array, as-is."""
    text, name = _read(source)
    return _pr_files(_json(text, name), name, base, head)


_FROM_SHA = re.compile(r"^From ([0-9a-f]{40}) ", re.M)  # git format-patch's first line
_SUBJECT = re.compile(r"^Subject: (?:\[[^\]]*\] *)?(.+)$", re.M)


def _diff(text: str, name: str, base: str, head: str) -> ChangeSet:
    try:
        patch = PatchSet(text)
    except UnidiffParseError as exc:
        raise InputError(f"{name}: not a unified diff: {exc}") from None
    if not patch:
        raise InputError(f"{name}: no file changes found in the diff")
    files = []
    for pf in patch:
        status = "added" if pf.is_added_file else "removed" if pf.is_removed_file else "modified"
        prev = pf.source_file[2:] if pf.is_rename and pf.source_file.startswith("a/") else None
        body = "".join(str(h) for h in pf)
        files.append(ChangedFile(filename=pf.path, status="renamed" if prev else status,
                                 previous_filename=prev, patch=body or None))
    sha, subject = _FROM_SHA.search(text), _SUBJECT.search(text)
    return ChangeSet(base=base, head=sha.group(1) if sha and head == "unknown" else head,
                     title=subject.group(1).strip() if subject else f"diff {Path(name).name}",
                     files=files)


def changeset_from_diff(source: str, *, base: str = "unknown", head: str = "unknown") -> ChangeSet:
    """A ChangeSet from unified diff text (``git diff`` or ``git format-patch`` output), parsed
    with unidiff.

    Each file keeps its patch text (hunks); ``symbols`` stays unknown (``None``) — selection
    reads hunk headers when it needs symbols from a patch.  A format-patch's commit becomes the
    head and its subject the title; a plain diff is titled ``diff <file name>``.
    """
    text, name = _read(source)
    return _diff(text, name, base, head)


#: what a refused change file is told to do instead
CHANGES_HINT = ("build one with `relay changes --from SRC --to SRC --out change.json` "
                "(SRC: a wheel, an extracted tree or REPO@REV)")
_DIFF_HEADER = re.compile(r"^(diff --git |--- \S.*\n\+\+\+ )", re.M)


def _compare(data: dict, name: str) -> ChangeSet:
    """GitHub's compare API answer (``GET /repos/{o}/{r}/compare/{base}...{head}``)."""
    commits = data.get("commits") or []
    base = (data.get("merge_base_commit") or data.get("base_commit") or {}).get("sha") or "unknown"
    head = commits[-1].get("sha", "unknown") if commits and isinstance(commits[-1], dict) else "unknown"
    return _pr_files(data.get("files"), f"{name}: files", base, head)


def read_change(source: str) -> ChangeSet:
    """The change in the file ``source`` (``-`` = stdin), whatever of these it holds — told
    apart by content: a ChangeSet JSON object (design §4), GitHub's compare API answer, GitHub's
    PR-files JSON array, or a unified diff.  Raises ``InputError`` with ``file:line:col`` for
    broken JSON and with ``CHANGES_HINT`` when the content is none of them."""
    text, name = _read(source)
    start = text.lstrip()[:1]
    if start in ("{", "["):
        data = _json(text, name)
        if isinstance(data, list):
            return _pr_files(data, name, "unknown", "unknown")
        if "files" in data and ("base_commit" in data or "merge_base_commit" in data):
            return _compare(data, name)
        if not {"base", "head", "files"} & set(data):
            raise InputError(f"{name}: a JSON object without base, head or files is not a "
                             f"ChangeSet; {CHANGES_HINT}")
        try:
            return ChangeSet.model_validate(data)
        except ValidationError as exc:
            raise _validation(name, exc) from None
    if _DIFF_HEADER.search(text):
        return _diff(text, name, "unknown", "unknown")
    first = next((ln for ln in text.splitlines() if ln.strip()), "")[:60]
    raise InputError(f"{name}:1:1: not a change (a ChangeSet or PR-files JSON, or a unified diff)"
                     f"{f' — starts with {first!r}' if first else ': the file is empty'}; {CHANGES_HINT}")


def revision_hint(ref: str) -> str:
    """The message for a REF that is not a file: a commit or range needs a checkout."""
    if looks_like_revision(ref):
        return (f"{ref}: no such file; a commit or range A..B is read from a PyTorch checkout: "
                f"add --upstream PATH")
    return f"{ref}: no such file; give a ChangeSet, PR-files JSON or diff file, or {CHANGES_HINT}"


def looks_like_revision(ref: str) -> bool:
    """Whether ``ref`` reads like a git revision: ``A..B``, a 7–40 hex-digit sha, ``HEAD~2``."""
    from relay.changes.gitrange import looks_like_range

    return looks_like_range(ref) or re.fullmatch(r"[0-9a-fA-F]{7,40}|HEAD([~^]\d*)*", ref) is not None


SPEC_SUFFIXES = (".yaml", ".yml")


def spec_files_in(directory: Path) -> list[Path]:
    """Every ``*.yaml``/``*.yml`` file under ``directory`` (recursive), sorted — what
    ``relay specs check DIR`` checks.  Raises ``InputError`` naming every ``*.yaml``/``*.yml``
    entry that is a broken symlink (its target missing): a spec silently left out would make
    its tests vanish from every run without a word."""
    named = [p for p in directory.rglob("*") if p.suffix in SPEC_SUFFIXES]
    broken = sorted(p for p in named if p.is_symlink() and not p.exists())
    if broken:
        raise InputError("; ".join(f"{p}: a broken symlink (its target {p.readlink()} does not "
                                   "exist)" for p in broken))
    return sorted(p for p in named if p.is_file())


def spec_files(paths: Sequence[Path]) -> list[Path]:
    """``--spec`` arguments as spec files, in order: a file as given, a directory as
    ``spec_files_in`` (duplicates dropped).

    Raises ``InputError`` for a path that does not exist, is not a regular file or directory
    (``/dev/null``), or is a directory without spec files.
    """
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = spec_files_in(p)
            if not found:
                raise InputError(f"{p}: a directory with no spec files (*.yaml, *.yml) in it")
        elif p.is_file():
            found = [p]
        elif p.exists():
            raise InputError(f"{p}: not a spec file (not a regular file or directory)")
        else:
            raise InputError(f"{p}: no such spec file or directory")
        out += [f for f in found if f not in out]
    return out
