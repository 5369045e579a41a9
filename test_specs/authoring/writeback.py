"""Spec write-back: proposed ``force_xfail`` edits as a unified diff against the spec file as it is.

Stage 4 finds failures caused by an aten op the device cannot run; ``spec_patch`` turns them into
a patch that ``git apply`` (or ``relay specs apply``) accepts.  Each proposal makes one OpInfo
``force_xfail`` in ``global.supported_ops`` (torch-spyre's rule: it turns only
``mandatory_success`` items of that op into ``xfail``) with its ``reason`` and ``issue``, and a
YAML comment above it saying which run saw which failures.

The file is edited as text at the positions a round-trip parse (ruamel.yaml) reports, so every
other byte — comments, key order, quoting, flow or block layout — stays as written; only the lines
of an edit change, and ``difflib`` makes one hunk per edited place (proposals whose edits land on
adjacent lines share a hunk).  The edits, by what the spec already has:

* the op listed in ``global.supported_ops`` (``- add``, ``- {name: add, ...}`` or a block
  mapping): ``force_xfail``, ``reason``, ``issue`` are added to that entry;
* not listed: a new ``- {name: op, force_xfail: true, ...}`` entry ends the list (created under
  ``global``, itself created at the end of ``test_suite_config`` when missing).

Every patched spec is checked by expanding it (``test_specs.expand.universe``) before and after: the same
item ids, and exactly the proposed items turned from ``mandatory_success`` to ``xfail``.  A
proposal that would change anything else — e.g. the first ``supported_ops`` entry of a spec whose
include-less test entries then run only the listed ops — is left out with the reason
(``SpecPatch.skipped``).
"""

from __future__ import annotations

import difflib
import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")

__all__ = ["Proposal", "SpecPatch", "spec_patch", "patched_text"]


@dataclass(frozen=True)
class Proposal:
    """Make OpInfo ``subject`` (``name`` or ``name.variant``) ``force_xfail`` because ``aten``
    has no Spyre kernel; ``tests``: the failing item ids; ``source``: where it was seen (a run)."""

    subject: str
    aten: str
    tests: tuple[str, ...]
    reason: str
    issue: str
    source: str = ""

    def comment(self) -> str:
        """The YAML comment written above the edit (one line)."""
        seen = f"{len(self.tests)} failed test(s), e.g. {self.tests[0]}" if self.tests else "no test"
        where = f" in {self.source}" if self.source else ""
        return f"# proposed by spyre-relay: {self.reason}; {seen}{where}"


@dataclass
class SpecPatch:
    """The write-back of one spec file: ``diff`` (unified, ``a/<name>`` → ``b/<name>``; empty
    when nothing applies), the proposals in it and the ones ``skipped`` with why."""

    path: Path
    name: str
    diff: str = ""
    applied: list[Proposal] = field(default_factory=list)
    skipped: list[tuple[Proposal, str]] = field(default_factory=list)


class _Unsupported(Exception):
    """The spec's layout has no place this writer can edit safely (the message says which)."""


def _load(text: str) -> Any:
    return YAML(typ="rt").load(text)


def _flow_entry(p: Proposal, name: str | None = None) -> str:
    fields = _fields(p)
    head = f"name: {_scalar(name)}, " if name is not None else ""
    return "{" + head + ", ".join(f"{k}: {v}" for k, v in fields) + "}"


def _scalar(value: str) -> str:
    """``value`` plain when YAML reads it back as the same string, else double-quoted (JSON)."""
    return value if _PLAIN.fullmatch(value) else json.dumps(value)


def _fields(p: Proposal) -> list[tuple[str, str]]:
    return [("force_xfail", "true"), ("reason", json.dumps(p.reason)), ("issue", json.dumps(p.issue))]


def _close_of(lines: list[str], line: int, col: int) -> tuple[int, int]:
    """(line, col) of the bracket closing the flow collection opened at ``lines[line][col]``."""
    depth, quote = 0, ""
    for n in range(line, len(lines)):
        text = lines[n]
        for c in range(col if n == line else 0, len(text)):
            ch = text[c]
            if quote:
                quote = "" if ch == quote else quote
            elif ch in "'\"":
                quote = ch
            elif ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
                if depth == 0:
                    return n, c
            elif ch == "#" and (c == 0 or text[c - 1].isspace()):
                break
    raise _Unsupported("unterminated flow collection")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _block_end(lines: list[str], start: int, col: int) -> int:
    """The index after the last line of the block starting at ``start`` whose content lies right
    of column ``col``; trailing blank and comment lines are left to what follows."""
    end, n = start + 1, start + 1
    while n < len(lines):
        stripped = lines[n].strip()
        if stripped and not stripped.startswith("#"):
            if len(_indent(lines[n])) <= col:
                break
            end = n + 1
        n += 1
    return end


def _edit_listed(lines: list[str], ops: Any, i: int, p: Proposal) -> list[str]:
    """Add force_xfail/reason/issue to ``ops[i]`` (a scalar name, flow or block mapping)."""
    line, col = ops.lc.item(i)
    entry = ops[i]
    comment = _indent(lines[line]) + p.comment()
    if isinstance(entry, str):
        text = lines[line]
        token = text[col:].split(",")[0].split("]")[0].split("#")[0].rstrip()
        new = text[:col] + _flow_entry(p, name=entry) + text[col + len(token):]
        return lines[:line] + [comment, new] + lines[line + 1:]
    if any(k in entry for k in ("force_xfail", "reason", "issue")):
        raise _Unsupported(f"its supported_ops entry already sets force_xfail/reason/issue "
                           f"(line {line + 1})")
    if entry.fa.flow_style():
        cl, cc = _close_of(lines, line, col if lines[line][col] == "{" else lines[line].index("{", col))
        text = lines[cl]
        new = text[:cc] + ", " + ", ".join(f"{k}: {v}" for k, v in _fields(p)) + text[cc:]
        return lines[:line] + [comment] + lines[line:cl] + [new] + lines[cl + 1:]
    kline, kcol = entry.lc.key("name")
    pad = " " * kcol
    added = [pad + p.comment().lstrip()] + [f"{pad}{k}: {v}" for k, v in _fields(p)]
    return lines[:kline + 1] + added + lines[kline + 1:]


def _append_entry(lines: list[str], gl: Any, p: Proposal) -> list[str]:
    """A new entry at the end of ``global.supported_ops`` (flow or block list)."""
    ops = gl["supported_ops"]
    entry = _flow_entry(p, name=p.subject)
    if ops.fa.flow_style():
        vline, vcol = gl.lc.value("supported_ops")
        cl, cc = _close_of(lines, vline, vcol)
        text = lines[cl]
        sep = ", " if len(ops) else ""
        kline = gl.lc.key("supported_ops")[0]
        edited = lines[:cl] + [text[:cc] + sep + entry + text[cc:]] + lines[cl + 1:]
        return edited[:kline] + [_indent(lines[kline]) + p.comment()] + edited[kline:]
    last_line, last_col = ops.lc.item(len(ops) - 1)
    dash = lines[last_line].rfind("-", 0, last_col)
    if dash < 0:
        raise _Unsupported("cannot find the '-' of the last supported_ops entry")
    end = _block_end(lines, last_line, dash)
    pad = " " * dash
    return lines[:end] + [pad + p.comment(), f"{pad}- {entry}"] + lines[end:]


def _add_list(lines: list[str], tsc: Any, p: Proposal) -> list[str]:
    """``supported_ops`` with one entry, under ``global`` (created when missing)."""
    entry = _flow_entry(p, name=p.subject)
    gl = tsc.get("global")
    if gl is None:
        if "global" in tsc or not hasattr(tsc, "lc") or tsc.fa.flow_style() or not len(tsc):
            raise _Unsupported("test_suite_config has no block mapping to add 'global' to")
        col = tsc.lc.key(next(iter(tsc)))[1]
        tline, tcol = _root_key(lines, tsc)
        end = _block_end(lines, tline, tcol)
        pad = " " * col
        return lines[:end] + [f"{pad}global:", f"{pad}  {p.comment()}", f"{pad}  supported_ops:",
                              f"{pad}    - {entry}"] + lines[end:]
    if "supported_ops" in gl or gl.fa.flow_style() or not len(gl):
        raise _Unsupported("global.supported_ops is null or global is not a block mapping")
    gline = tsc.lc.key("global")[0]
    kcol = gl.lc.key(next(iter(gl)))[1]
    pad = " " * kcol
    return lines[:gline + 1] + [pad + p.comment(), f"{pad}supported_ops:", f"{pad}  - {entry}"] + lines[gline + 1:]


def _root_key(lines: list[str], tsc: Any) -> tuple[int, int]:
    """(line, col) of the ``test_suite_config:`` key."""
    for n, text in enumerate(lines):
        if text.startswith("test_suite_config"):
            return n, 0
    raise _Unsupported("no test_suite_config key at column 1")


def _apply_one(text: str, p: Proposal) -> str:
    """``text`` with proposal ``p`` written in (see the module docstring); raises ``_Unsupported``."""
    doc = _load(text)
    tsc = doc.get("test_suite_config") if hasattr(doc, "get") else None
    if tsc is None or not hasattr(tsc, "lc"):
        raise _Unsupported("no test_suite_config mapping")
    lines = text.splitlines()
    gl = tsc.get("global")
    ops = gl.get("supported_ops") if gl is not None else None
    if ops is None:
        new = _add_list(lines, tsc, p)
    else:
        names = [o if isinstance(o, str) else o.get("name") for o in ops]
        new = _edit_listed(lines, ops, names.index(p.subject), p) if p.subject in names \
            else _append_entry(lines, gl, p)
    return "\n".join(new) + ("\n" if text.endswith("\n") else "")


def patched_text(path: Path, text: str, proposals: list[Proposal]) -> tuple[str, SpecPatch]:
    """``text`` (the spec at ``path``) with every proposal that checks out written in.  The spec
    is expanded once before and once after all edits; only when that check fails is each
    proposal checked on its own (one expansion each) to leave out the ones that do not hold."""
    before = _modes(path, text)
    for one_by_one in (False, True):
        patch = SpecPatch(path=path, name=path.name)
        current = text
        for p in proposals:
            try:
                candidate = _apply_one(current, p)
            except (_Unsupported, ValueError, KeyError) as exc:
                patch.skipped.append((p, str(exc)))
                continue
            problem = _check(path, candidate, before, patch.applied + [p]) if one_by_one else None
            if problem:
                patch.skipped.append((p, problem))
                continue
            current = candidate
            patch.applied.append(p)
        if one_by_one or not patch.applied or _check(path, current, before, patch.applied) is None:
            return current, patch
    raise AssertionError("unreachable")


def spec_patch(path: Path, proposals: list[Proposal], *, name: str | None = None) -> SpecPatch:
    """The unified diff writing ``proposals`` into the spec at ``path`` (named ``a/<name>`` and
    ``b/<name>``; default the file name).  Raises ``OSError`` when the file cannot be read."""
    text = path.read_text(encoding="utf-8")
    new, patch = patched_text(path, text, proposals)
    patch.name = name or path.name
    if new != text:
        diff = difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True),
                                    fromfile=f"a/{patch.name}", tofile=f"b/{patch.name}")
        patch.diff = f"diff --git a/{patch.name} b/{patch.name}\n" + "".join(diff)
    return patch


def _modes(path: Path, text: str) -> dict[str, str]:
    """Item id → mode of the spec ``text`` saved as ``path``'s name (ids carry the file stem)."""
    from test_specs.expand.universe import expand_spec  # imports torch and op_db
    from test_specs.format.loader import load_spec

    with tempfile.TemporaryDirectory(prefix="spec-writeback-") as tmp:
        copy = Path(tmp) / path.name
        copy.write_text(text, encoding="utf-8")
        return {i.id: i.mode for i in expand_spec(load_spec(copy))}


def _check(path: Path, text: str, before: dict[str, str], applied: list[Proposal]) -> str | None:
    """Why the patched ``text`` is wrong (other items, other modes), or ``None``."""
    from test_specs.format.loader import SpecLoadError

    try:
        after = _modes(path, text)
    except (SpecLoadError, ValueError) as exc:
        return f"the edited spec does not load: {str(exc).splitlines()[0]}"
    if set(after) != set(before):
        changed = sorted(set(after) ^ set(before))
        return f"it would change which items the spec has ({len(changed)}, e.g. {changed[0]})"
    wanted = {t for p in applied for t in p.tests}
    for item_id, mode in after.items():
        expected = "xfail" if item_id in wanted and before[item_id] == "mandatory_success" else before[item_id]
        if item_id in wanted and mode != expected:
            return f"{item_id} would be {mode}, not xfail"
    return None
