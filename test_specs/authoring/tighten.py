"""Tighten stale xfails: the write-back edit for an ``xfail`` item that passed.

``tighten_patch(path, stale_ids, name=...)`` moves the include name that makes each stale item
``xfail`` (``test_specs.authoring.hygiene``: its origin entry and name) into a
``mandatory_success`` entry of the same template restricted to the same dtype — the layout
``generate`` writes — as a unified diff against the file as it is.  A name whose xfail entry
would be left without names takes the whole entry with it (an empty include list would select
every op).  The file is edited as text, by the line marks of the loaded spec, so every other
byte stays; the patched spec is expanded before and after: the same item ids, exactly the stale
items turned ``xfail`` → ``mandatory_success``, nothing else — or the edit is left out with the
reason (``TightenPatch.skipped``).
"""

from __future__ import annotations

import difflib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from test_specs.authoring.hygiene import ITEM_ID, _passing_entry, _subjects_of
from test_specs.format.loader import Spec, load_spec

__all__ = ["TightenPatch", "tighten_patch"]


@dataclass
class TightenPatch:
    """The diff (empty when nothing applies), the tightened item ids, and ``skipped`` (id, why)."""

    name: str
    diff: str = ""
    applied: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _block(lines: list[str], start: int) -> int:
    """End (exclusive, 0-based) of the YAML list element starting at line index ``start``:
    following lines indented deeper than its dash."""
    col = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and lines[end].strip() and len(lines[end]) - len(lines[end].lstrip()) > col:
        end += 1
    return end


def _plan(spec: Spec, lines: list[str], item_id: str,
          origins: dict[str, tuple[int, int | None]]) -> tuple[tuple[int, int], int, int, int]:
    """Where the include name of stale ``item_id`` moves: ``((file, test) of its xfail entry,
    its name index, the line index after which it is inserted, the indentation shift)``;
    raises ``ValueError`` saying why it cannot move."""
    m = ITEM_ID.match(item_id)
    if m is None or item_id not in origins or origins[item_id][1] is None:
        raise ValueError("not produced by a test entry of this spec")
    fi, ti = origins[item_id]
    assert ti is not None
    f, template, dtype = spec.config.files[fi], m["template"], m["dtype"]
    key = "modules" if f.source == "module_db" else "ops"
    names = getattr(f.tests[ti].edits, key).include
    ni = next((i for i, n in enumerate(names) if m["subject"] in _subjects_of(f.source, n)), None)
    target = _passing_entry(spec, fi, template, dtype)
    if ni is None or target is None or not getattr(f.tests[target].edits, key).include:
        raise ValueError(f"no include name to move or no mandatory_success entry of {template} for {dtype}")
    src = spec.pos("files", fi, "tests", ti, "edits", key, "include", ni).line - 1
    tgt_names = getattr(f.tests[target].edits, key).include
    last = spec.pos("files", fi, "tests", target, "edits", key, "include", len(tgt_names) - 1).line - 1
    shift = (len(lines[last]) - len(lines[last].lstrip())) - (len(lines[src]) - len(lines[src].lstrip()))
    return (fi, ti), ni, _block(lines, last), shift


def _moved(spec: Spec, text: str, stale: list[str]) -> str:
    """``text`` with every planned move of ``stale`` applied at once (line indices of ``text``)."""
    lines = text.splitlines()
    origins = _origins(spec)
    moving: dict[tuple[int, int], set[int]] = {}
    inserts: dict[int, list[str]] = {}
    for item_id in stale:
        entry, ni, at, shift = _plan(spec, lines, item_id, origins)
        if ni in moving.setdefault(entry, set()):
            continue
        moving[entry].add(ni)
        fi, ti = entry
        key = "modules" if spec.config.files[fi].source == "module_db" else "ops"
        src = spec.pos("files", fi, "tests", ti, "edits", key, "include", ni).line - 1
        block = lines[src:_block(lines, src)]
        inserts.setdefault(at, []).extend((" " * shift + ln) if shift >= 0 else ln[-shift:] for ln in block)
    drop: set[int] = set()
    for (fi, ti), nis in moving.items():
        f = spec.config.files[fi]
        key = "modules" if f.source == "module_db" else "ops"
        if len(nis) == len(getattr(f.tests[ti].edits, key).include):  # empty include = every op
            start = spec.pos("files", fi, "tests", ti).line - 1
            drop.update(range(start, _block(lines, start)))
            continue
        for ni in nis:
            start = spec.pos("files", fi, "tests", ti, "edits", key, "include", ni).line - 1
            drop.update(range(start, _block(lines, start)))
    out: list[str] = []
    for i, ln in enumerate(lines + [""]):
        out.extend(inserts.get(i, []))
        if i < len(lines) and i not in drop:
            out.append(ln)
    return "\n".join(out) + "\n"


def _modes(path: Path, text: str) -> dict[str, str]:
    from test_specs.expand.universe import expand_spec

    with tempfile.TemporaryDirectory(prefix="spec-tighten-") as tmp:
        copy = Path(tmp) / path.name
        copy.write_text(text, encoding="utf-8")
        return {i.id: i.mode for i in expand_spec(load_spec(copy))}


def tighten_patch(path: Path, stale: list[str], *, name: str | None = None) -> TightenPatch:
    """The diff tightening the ``stale`` xfail item ids of the spec at ``path`` (module
    docstring): every move at once, checked by one expansion before and one after; when the
    check fails, nothing is proposed and every id is ``skipped`` with the reason."""
    patch = TightenPatch(name=name or path.name)
    text = path.read_text(encoding="utf-8")
    before = _modes(path, text)
    wanted: list[str] = []
    spec = load_spec(path)
    for item_id in stale:
        if before.get(item_id) != "xfail":
            patch.skipped.append((item_id, f"not an xfail item of {path.name}"))
            continue
        try:
            _plan(spec, text.splitlines(), item_id, _origins(spec))
        except ValueError as exc:
            patch.skipped.append((item_id, str(exc)))
            continue
        wanted.append(item_id)
    if not wanted:
        return patch
    new = _moved(spec, text, wanted)
    after = _modes(path, new)
    if set(after) != set(before) or any(after[i] != ("mandatory_success" if i in wanted else before[i])
                                        for i in before):
        patch.skipped += [(i, "the moves would change other items") for i in wanted]
        return patch
    patch.applied = wanted
    diff = difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True),
                                fromfile=f"a/{patch.name}", tofile=f"b/{patch.name}")
    patch.diff = f"diff --git a/{patch.name} b/{patch.name}\n" + "".join(diff)
    return patch


_ORIGINS: dict[int, tuple[Spec, dict[str, tuple[int, int | None]]]] = {}


def _origins(spec: Spec) -> dict[str, tuple[int, int | None]]:
    """``expand_with_origins(spec)``'s origins, computed once per loaded spec."""
    from test_specs.expand.universe import expand_with_origins

    held = _ORIGINS.get(id(spec))
    if held is None or held[0] is not spec:
        _ORIGINS.clear()
        held = _ORIGINS[id(spec)] = (spec, expand_with_origins(spec)[1])
    return held[1]
