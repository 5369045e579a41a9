"""Spec hygiene: entries that do nothing, say a thing twice, or no longer say the truth.

torch-spyre had to build this for itself (its config integrity checker, its stale-xfail and XPASS
handling).  ``relay specs check`` prints these as ``file:line:col: warning: ...``, each with the
edit that removes it; they never change the exit status (an error does).  For ``source:``
entries (``op_db`` / ``module_db``), per test entry and its ``edits.ops|modules.include`` names:

* **dead pattern** — an include name that produces no item of its entry (every dtype filtered
  out, the template does not apply to it, or every item was produced earlier); a whole test
  entry that produces no item;
* **duplicate** — the same include name twice in one list;
* **shadowed** — an include name every one of whose items another name of the same list already
  selects (``softmax`` selects ``softmax.with_dtype``);
* **stale xfail** (with a run's results, ``stale_xfails``) — an ``xfail`` item that passed
  (``xpassed``): the spec can be tightened; the warning points at the include name (or entry)
  that makes it ``xfail`` and says the edit: move the name to a ``mandatory_success`` entry of the
  same template and dtype (the line of one, when the spec has it).

Item ids are ``<suite>::<template>[<subject>-<dtype>]`` (``test_specs.values.items``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from test_specs.format.loader import Spec, SpecError

__all__ = ["hygiene_warnings", "stale_xfails", "read_results", "ITEM_ID"]

ITEM_ID = re.compile(r"^(?P<suite>[^:]+)::(?P<template>[^\[]+)\[(?P<subject>.+)-(?P<dtype>[a-z0-9]+)\]$")


def _subjects_of(source: str, name: Any) -> set[str]:
    """The subjects (``name`` / ``name.variant``) an include entry selects in its database."""
    from test_specs.expand.universe import _kind_of, _resolve, _source, _subject

    db, _ = _source(source)
    return {_subject(db[i], _kind_of(source)) for i in _resolve(source, name)}


def _produced(origins: dict[str, tuple[int, int | None]]) -> dict[tuple[int, int], set[str]]:
    """(file index, test index) → the subjects its items carry."""
    out: dict[tuple[int, int], set[str]] = defaultdict(set)
    for item_id, (fi, ti) in origins.items():
        m = ITEM_ID.match(item_id)
        if m and ti is not None:
            out[(fi, ti)].add(m["subject"])
    return out


def hygiene_warnings(spec: Spec) -> list[SpecError]:
    """Dead patterns, duplicates and shadowed names of ``spec`` (see the module docstring)."""
    from test_specs.expand.universe import expand_with_origins

    _items, origins, errors = expand_with_origins(spec)
    if errors:  # semantic errors are check_specs' business; hygiene needs a spec that expands
        return []
    produced = _produced(origins)
    out: list[SpecError] = []
    for fi, f in enumerate(spec.config.files):
        if f.source is None:
            continue
        key = "modules" if f.source == "module_db" else "ops"
        for ti, t in enumerate(f.tests):
            loc = ("files", fi, "tests", ti)
            if not produced.get((fi, ti)):
                out.append(spec.error(loc, "warning: dead entry: this test entry produces no item "
                                           "(edit: delete the entry)"))
                continue
            names = getattr(t.edits, key).include
            subjects = [_subjects_of(f.source, n) for n in names]
            seen: dict[tuple[str, bool], int] = {}
            for ni, n in enumerate(names):
                nloc = loc + ("edits", key, "include", ni)
                ident = (n.name, bool(getattr(n, "exact", False)))
                if ident in seen:
                    line = spec.pos(*loc, "edits", key, "include", seen[ident]).line
                    out.append(spec.error(nloc, f"warning: duplicate: {n.name!r} is already listed at line "
                                                f"{line} (edit: delete this line)"))
                    continue
                seen[ident] = ni
                other = next((j for j, s in enumerate(subjects) if j != ni and names[j].name != n.name
                              and subjects[ni] and subjects[ni] < s), None)
                if other is not None:
                    out.append(spec.error(nloc, f"warning: shadowed: every item of {n.name!r} is selected by "
                                                f"{names[other].name!r} in the same list (edit: delete this line)"))
                elif not subjects[ni] & produced[(fi, ti)]:
                    out.append(spec.error(nloc, f"warning: dead pattern: {n.name!r} produces no item of this "
                                                "entry (its dtypes or template filter it out, or an earlier entry "
                                                "produces them; edit: delete this line)"))
    return out


def _entry_for(spec: Spec, fi: int, ti: int, subject: str, key: str) -> tuple[Any, ...]:
    """The loc of the include name of entry (fi, ti) that selects ``subject``, else the entry."""
    f = spec.config.files[fi]
    names = getattr(spec.config.files[fi].tests[ti].edits, key).include
    for ni, n in enumerate(names):
        if subject in _subjects_of(f.source, n):
            return ("files", fi, "tests", ti, "edits", key, "include", ni)
    return ("files", fi, "tests", ti)


def _passing_entry(spec: Spec, fi: int, template: str, dtype: str) -> int | None:
    """A ``mandatory_success`` test entry of ``template`` restricted to ``dtype`` (or to no dtype)."""
    for ti, t in enumerate(spec.config.files[fi].tests):
        if t.mode != "mandatory_success" or template not in t.names:
            continue
        inc = {d.name for d in t.edits.dtypes.include}
        if not inc or inc == {dtype}:
            return ti
    return None


def stale_xfails(spec: Spec, results: dict[str, str]) -> list[SpecError]:
    """A warning per ``xfail`` item of ``spec`` that passed in ``results`` (test id → outcome),
    at the name or entry that declares it, with the edit that tightens it."""
    from test_specs.expand.universe import expand_with_origins

    items, origins, errors = expand_with_origins(spec)
    if errors:
        return []
    out: list[SpecError] = []
    for it in items:
        if results.get(it.id) != "xpassed" or it.mode != "xfail" or origins.get(it.id, (0, None))[1] is None:
            continue
        fi, ti = origins[it.id]
        f = spec.config.files[fi]
        key = "modules" if f.source == "module_db" else "ops"
        m = ITEM_ID.match(it.id)
        subject = m["subject"] if m else ""
        loc = _entry_for(spec, fi, ti, subject, key)
        target = _passing_entry(spec, fi, it.template, it.dtype)
        where = (f"the mandatory_success entry at line {spec.pos('files', fi, 'tests', target).line}"
                 if target is not None else f"a new mandatory_success entry of {it.template} for {it.dtype}")
        out.append(spec.error(loc, f"warning: stale xfail: {it.id} passed (xpassed); its declared reason "
                                   f"{(it.reason or '-')[:80]!r} no longer holds (edit: move {subject!r} "
                                   f"from this xfail entry to {where})"))
    return out


def read_results(path: Path) -> dict[str, str]:
    """Test id → outcome from a run's results: ``relay run --json`` output (``{"results": [...]}``),
    a stored run's JSON (``relay replay --json``) or ``results.jsonl`` (one result per line).
    Raises ``ValueError`` naming the file for anything else."""
    text = path.read_text(encoding="utf-8")
    rows: Iterable[Any]
    try:
        doc = json.loads(text)
        rows = doc.get("results", []) if isinstance(doc, dict) else doc
    except json.JSONDecodeError:
        try:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{exc.lineno}: not JSON or JSON lines of results: {exc.msg}") from None
    out = {r["id"]: r["outcome"] for r in rows if isinstance(r, dict) and "id" in r and "outcome" in r}
    if not out:
        raise ValueError(f"{path}:1: no results (objects with 'id' and 'outcome') in it")
    return out
