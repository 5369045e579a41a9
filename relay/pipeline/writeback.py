"""A run's spec write-back: ``<run dir>/spec-proposal.patch``, a patch ``git apply`` accepts.

After stage 4, every failure caused by an aten op the device cannot run (the backend's
``spyre: aten::<op> ... not supported``; ``selection.stages.refine.unsupported_op_of``) becomes a
``test_specs.authoring.writeback.Proposal`` for its OpInfo in the spec file it came from (the item id's
suite is the spec's file stem).  ``write_proposal`` writes one patch for all spec files of the run:
a plain-text header (which run, how to apply it, what was left out and why — ``git apply`` and
``patch`` skip text before the first ``diff --git``), then one ``diff --git`` section per spec.

File names in the patch are relative to the root to apply it from: the git work tree holding the
spec (``git rev-parse --show-toplevel``), else the spec's directory; the header's ``root:`` line
names it, which ``relay specs apply`` reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path

from relay.changes.git import git_run
from relay.errors import InputError
from selection.stages.refine import unsupported_op_of
from test_specs.authoring.tighten import TightenPatch, tighten_patch
from test_specs.authoring.writeback import Proposal, SpecPatch, spec_patch
from test_specs.values.results import TestResult

__all__ = ["PATCH_NAME", "proposals_of", "stale_of", "write_proposal", "patch_root", "apply_proposal", "ROOT_LINE"]

#: the proposal's file name in the run directory
PATCH_NAME = "spec-proposal.patch"
#: the header line naming the directory to apply the patch from
ROOT_LINE = re.compile(r"^root: (.+)$", re.MULTILINE)
_SUBJECT = re.compile(r"\[(.+)-[a-z0-9]+\]$")


def proposals_of(results: Sequence[TestResult], *, run_id: str,
                 predicted: AbstractSet[str] = frozenset()) -> dict[str, list[Proposal]]:
    """Spec suite (file stem) → one ``Proposal`` per OpInfo subject whose tests failed on an
    unsupported aten op, in first-failure order.  ``predicted``: ids the spec declares
    ``mandatory_success`` that stage 3 ran as ``xfail`` because it predicted the failure — one
    that xfailed on an unsupported op is proposed too, so the spec says what the device does
    (else every run would predict it again and the spec would never learn).  ModuleInfo items
    get none (no ``force_xfail`` for modules in torch-spyre's format)."""
    found: dict[tuple[str, str], dict] = {}
    for r in results:
        if r.id in predicted and r.outcome == "xfailed":
            r = r.model_copy(update={"outcome": "failed"})
        aten = unsupported_op_of(r)
        m = _SUBJECT.search(r.id)
        if aten is None or r.op is None or m is None:
            continue
        suite = r.id.split("::", 1)[0]
        entry = found.setdefault((suite, m.group(1)), {"aten": aten, "tests": []})
        entry["tests"].append(r.id)
    out: dict[str, list[Proposal]] = {}
    for (suite, subject), e in found.items():
        out.setdefault(suite, []).append(Proposal(
            subject=subject, aten=e["aten"], tests=tuple(e["tests"]),
            reason=f"{e['aten']} has no Spyre kernel",
            issue=f"spyre-relay run {run_id}: {e['aten']} unsupported on Spyre",
            source=f"run {run_id}"))
    return out


def patch_root(spec: Path) -> Path:
    """The directory a patch of ``spec`` is applied from (see the module docstring)."""
    spec = spec.resolve()
    proc = git_run(spec.parent, "rev-parse", "--show-toplevel", error=InputError, label=str(spec))
    if proc.returncode == 0 and proc.stdout.strip():
        return Path(proc.stdout.strip()).resolve()
    return spec.parent


def write_proposal(results: Sequence[TestResult], spec_paths: Sequence[Path], *, run_id: str,
                   workdir: Path, predicted: AbstractSet[str] = frozenset()) -> tuple[Path | None, str | None]:
    """Write ``workdir/spec-proposal.patch`` for the run's unsupported-op failures (new
    ``force_xfail`` edits) and its stale xfails (``xpassed`` items moved to ``mandatory_success``,
    ``test_specs.authoring.tighten``; for a spec with both, only the first, the tightening
    listed as not proposed); returns its path and text, ``(None, None)`` when nothing is
    proposed."""
    by_suite = proposals_of(results, run_id=run_id, predicted=predicted)
    stale = stale_of(results)
    if not by_suite and not stale:
        return None, None
    specs = {Path(p).stem: Path(p) for p in spec_paths}
    roots = {suite: patch_root(specs[suite]) for suite in {*by_suite, *stale} if suite in specs}
    root = next(iter(roots.values()), None)
    patches: list[SpecPatch] = []
    tightened: list[TightenPatch] = []
    unplaced: list[str] = []
    for suite in sorted({*by_suite, *stale}):
        spec = specs.get(suite)
        proposals, ids = by_suite.get(suite, []), stale.get(suite, [])
        if spec is None or roots[suite] != root:
            unplaced += [f"{x}: no spec file of this run under {root} is named {suite}"
                         for x in [p.subject for p in proposals] + ids]
            continue
        name = spec.resolve().relative_to(root).as_posix()
        if proposals:
            patches.append(spec_patch(spec, proposals, name=name))
            unplaced += [f"tighten {i}: apply this file's force_xfail edits first, then rerun" for i in ids]
        elif ids:
            tightened.append(tighten_patch(spec, ids, name=name))
    text = (_header(run_id, root, patches, unplaced, tightened)
            + "".join(p.diff for p in patches) + "".join(t.diff for t in tightened))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / PATCH_NAME
    path.write_text(text, encoding="utf-8")
    return path, text


def stale_of(results: Sequence[TestResult]) -> dict[str, list[str]]:
    """Spec suite (file stem) → ids of its ``xfail`` items that passed (``xpassed``): the
    stale xfails the proposal tightens (``test_specs.authoring.tighten``)."""
    out: dict[str, list[str]] = {}
    for r in results:
        if r.outcome == "xpassed":
            out.setdefault(r.id.split("::", 1)[0], []).append(r.id)
    return out


def _header(run_id: str, root: Path | None, patches: list[SpecPatch], unplaced: list[str],
            tightened: Sequence[TightenPatch] = ()) -> str:
    lines = [f"Proposed spec edits from spyre-relay run {run_id} (review before applying; nothing was changed).",
             f"root: {root}" if root is not None else "root: (none)",
             f"Apply from the root with: git apply {PATCH_NAME}   or: relay specs apply <this file>",
             ""]
    for patch in patches:
        for p in patch.applied:
            lines.append(f"  {patch.name}: force_xfail {p.subject}: {p.reason} "
                         f"({len(p.tests)} failed test(s), e.g. {p.tests[0]})")
        for p, why in patch.skipped:
            lines.append(f"  not proposed: {patch.name}: {p.subject} ({p.reason}): {why}")
    for t in tightened:
        lines += [f"  {t.name}: tighten stale xfail {i}: it passed (xpassed); moved to mandatory_success"
                  for i in t.applied]
        lines += [f"  not proposed: {t.name}: tighten {i}: {why}" for i, why in t.skipped]
    lines += [f"  not proposed: {u}" for u in unplaced]
    return "\n".join(lines) + "\n\n"


def apply_proposal(text: str, root: Path | None = None) -> list[Path]:
    """Apply a proposal's ``text`` with ``git apply`` from ``root`` (default: its ``root:``
    header line); returns the patched files.  Raises ``InputError`` with git's message when the
    patch holds no edit or does not apply (nothing is changed then: ``--check`` runs first)."""
    import tempfile

    from unidiff import PatchSet

    if root is None:
        m = ROOT_LINE.search(text.split("\ndiff --git ", 1)[0])
        if m is None or not Path(m.group(1)).is_dir():
            raise InputError("the proposal names no existing root directory; give --root")
        root = Path(m.group(1))
    files = [root / p.path for p in PatchSet(text)]
    if not files:
        raise InputError("the proposal holds no spec edit (see its header for what was not proposed)")
    with tempfile.NamedTemporaryFile("w", suffix=".patch", delete=False, encoding="utf-8") as tmp:
        tmp.write(text)
    try:
        for args in (("apply", "--check", tmp.name), ("apply", tmp.name)):
            proc = git_run(root, *args, error=InputError, label=str(root))
            if proc.returncode != 0:
                lines = proc.stderr.strip().splitlines()
                raise InputError(f"git {' '.join(args[:-1])} in {root}: {lines[-1] if lines else 'failed'}")
    finally:
        Path(tmp.name).unlink(missing_ok=True)
    return files
