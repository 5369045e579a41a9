"""A spec's rules for the tests of one upstream file (source-tree mode), as torch-spyre applies them.

torch-spyre (``tests/oot_framework``, RFC 1287) decides per instantiated test variant; so does
``FileRules.decide(gcls, gtest, op, dtype, inst_cls, method) -> SpecItem | None``:

- the test entry: the first entry whose ``names`` holds the generic name exactly
  (``Class::test`` or ``test``), else the first whose pattern matches (a part holding
  ``* ? [`` is a glob, ``fnmatch``; or a regular expression, ``re.fullmatch``);
- ``None`` (the variant is not built: torch-spyre deletes it from the class) when its dtype is
  excluded (``edits.dtypes.exclude``), or outside ``global.supported_dtypes`` ∩ the op's
  ``global.supported_ops[].dtypes`` (when listed) and not in ``edits.dtypes.include``; when its
  op is excluded (``edits.ops.exclude``: ``name`` covers every variant); or when its mode is
  ``skip`` (a listed ``mode: skip`` or ``unlisted_test_mode: skip``);
- mode: the entry's ``mode``, else the file's ``unlisted_test_mode``; ``force_xfail`` on the op
  or the dtype turns only ``mandatory_success`` into ``xfail``;
- reason: the entry's ``reason`` key, else its YAML comment (``Spec.test_reason``: the name's own
  comment first), else the file's ``reason``;
- tolerance: ``edits.dtypes.include[].precision`` > the op's > ``supported_dtypes``'s > default.

``path`` tokens (``resolve``): ``${TORCH_ROOT}`` is the checkout (``--upstream``, else the
``TORCH_ROOT`` environment variable); ``${TORCH_DEVICE_ROOT}`` is the ``TORCH_DEVICE_ROOT``
environment variable, else the repository holding the spec (the nearest parent with ``.git``),
as torch-spyre's configs live in its own repository.  ``FileRules.unmatched()`` lists the names
that matched no test (for the diagnostics in ``test_specs.upstream.tree``).
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from test_specs.format.loader import Spec
from test_specs.format.precedence import effective_mode, effective_tolerance
from test_specs.format.schema import FileEntry, TestEntry
from test_specs.values.items import SpecItem

_PATTERN = re.compile(r"[*?\[]")
DEVICE_SUFFIX = "SPYRE"


def parse_variant(cls: type, name: str) -> tuple[str, str, str | None, str] | None:
    """(generic class, generic test, op, dtype) of an instantiated device-generic test.

    ``DeviceTypeTestBase.instantiate_test`` (common_device_type) wraps the generic test with
    ``functools.wraps`` (so ``__name__`` is the generic name) and binds its parameters as the
    default ``param_kwargs`` (``dtype``, ``op`` for ``@ops``).  The generic class is the base
    whose name is the instantiated class name minus ``SPYRE``.  ``op`` is ``name[.variant]``.
    """
    if not cls.__name__.endswith(DEVICE_SUFFIX):
        return None
    gname = cls.__name__[: -len(DEVICE_SUFFIX)]
    fn = vars(cls).get(name)
    if fn is None or not any(c.__name__ == gname for c in cls.__mro__):
        return None
    gtest = getattr(fn, "__name__", name)
    params = (fn.__defaults__ or ({},))[0] if getattr(fn, "__defaults__", None) else {}
    params = params if isinstance(params, dict) else {}
    opinfo = params.get("op")
    op = None
    if opinfo is not None and hasattr(opinfo, "name"):
        op = opinfo.name + (f".{opinfo.variant_test_name}" if getattr(opinfo, "variant_test_name", "") else "")
    dt = params.get("dtype")
    dtype = str(dt).removeprefix("torch.") if dt is not None and not isinstance(dt, (list, tuple)) else "none"
    return gname, gtest, op, dtype


def device_root(spec_path: Path) -> Path | None:
    """``${TORCH_DEVICE_ROOT}``: the env variable, else the git repository holding the spec."""
    env = os.environ.get("TORCH_DEVICE_ROOT")
    if env:
        return Path(env)
    for parent in Path(spec_path).resolve().parents:
        if (parent / ".git").exists():
            return parent
    return None


def substitute(path: str, torch_root: Path, spec_path: Path | None = None) -> str | None:
    """``path`` with its tokens replaced (see the module docstring); ``None`` when it uses
    ``${TORCH_DEVICE_ROOT}`` and no device root is known."""
    p = path.replace("${TORCH_ROOT}", str(torch_root)).replace("$TORCH_ROOT", str(torch_root))
    if "TORCH_DEVICE_ROOT" in p:
        dev = device_root(spec_path) if spec_path is not None else (
            Path(os.environ["TORCH_DEVICE_ROOT"]) if os.environ.get("TORCH_DEVICE_ROOT") else None)
        if dev is None:
            return None
        p = p.replace("${TORCH_DEVICE_ROOT}", str(dev)).replace("$TORCH_DEVICE_ROOT", str(dev))
    return p if os.path.isabs(p) else str(torch_root / p)


def resolve(path: str, torch_root: Path, spec_path: Path | None = None) -> list[Path]:
    """The files ``path`` names (tokens replaced, globs expanded, sorted); relative to
    ``torch_root`` when relative; ``[]`` when nothing matches or a token is unknown."""
    p = substitute(path, torch_root, spec_path)
    return [] if p is None else sorted(Path(x) for x in glob.glob(p, recursive=True))


def _part_matches(pattern: str, name: str) -> bool:
    if pattern == name:
        return True
    if not _PATTERN.search(pattern) and not any(c in pattern for c in ".+()|^$"):
        return False
    if fnmatch.fnmatchcase(name, pattern):
        return True
    try:
        return re.fullmatch(pattern, name) is not None
    except re.error:
        return False


def name_matches(pattern: str, gcls: str, gtest: str) -> bool:
    """Whether a ``names`` entry (``Class::test`` or ``test``, parts may be patterns) matches."""
    cls_pat, _, test_pat = pattern.rpartition("::")
    return _part_matches(test_pat, gtest) and (not cls_pat or _part_matches(cls_pat, gcls))


class FileRules:
    """The rules of ``spec.config.files[fi]`` for one upstream file at ``relpath``."""

    def __init__(self, spec: Spec, fi: int, relpath: str) -> None:
        self.spec, self.fi, self.relpath = spec, fi, relpath
        self.entry: FileEntry = spec.config.files[fi]
        self.matched: set[tuple[int, int]] = set()  # (test index, name index) that matched a test
        self.dropped: Counter[str] = Counter()  # variants not built, by why

    def entry_for(self, gcls: str, gtest: str) -> tuple[int, int, TestEntry] | None:
        """``(test index, name index, entry)`` of the entry naming ``gcls::gtest`` (exact first)."""
        generic = f"{gcls}::{gtest}"
        hits = [(ti, ni, t) for ti, t in enumerate(self.entry.tests) for ni, n in enumerate(t.names)
                if n in (generic, gtest)]
        hits = hits or [(ti, ni, t) for ti, t in enumerate(self.entry.tests) for ni, n in enumerate(t.names)
                        if name_matches(n, gcls, gtest)]
        for ti, ni, _ in hits:
            self.matched.add((ti, ni))
        return hits[0] if hits else None

    def unmatched(self) -> list[tuple[tuple[Any, ...], str]]:
        """``(loc, name)`` of every listed name that matched no test of the file."""
        return [(("files", self.fi, "tests", ti, "names", ni), n) for ti, t in enumerate(self.entry.tests)
                for ni, n in enumerate(t.names) if (ti, ni) not in self.matched]

    def allowed_dtype(self, test: TestEntry | None, op: str | None, dtype: str) -> bool:
        """The dtype precedence of the module docstring."""
        g = self.spec.config.global_
        edits = test.edits.dtypes if test else None
        if edits and dtype in {d.name for d in edits.exclude}:
            return False
        if edits and dtype in {d.name for d in edits.include}:
            return True
        sop = g.op(*op.split(".", 1)) if op else None
        allowed = {d.name for d in g.supported_dtypes} or {dtype}
        if sop and sop.dtypes:
            allowed &= {d.name for d in sop.dtypes}
        return dtype in allowed

    def op_excluded(self, test: TestEntry | None, op: str | None) -> bool:
        if not (test and op):
            return False
        return bool({op, op.split(".")[0]} & {n.name for n in test.edits.ops.exclude})

    def decide(self, gcls: str, gtest: str, op: str | None, dtype: str, inst_cls: str,
               method: str) -> SpecItem | None:
        """The ``SpecItem`` of one instantiated variant, or ``None`` if it is not built."""
        hit = self.entry_for(gcls, gtest)
        test = hit[2] if hit else None
        if dtype != "none" and not self.allowed_dtype(test, op, dtype):
            self.dropped["dtype"] += 1
            return None
        if self.op_excluded(test, op):
            self.dropped["op excluded"] += 1
            return None
        g = self.spec.config.global_
        sop = g.op(*op.split(".", 1)) if op else None
        gd = g.dtype(dtype) if dtype != "none" else None
        mode = effective_mode(test.mode if test else self.entry.unlisted_test_mode,
                              bool(sop and sop.force_xfail) or bool(gd and gd.force_xfail))
        if mode == "skip":
            self.dropped["skip (listed)" if test else "skip (unlisted)"] += 1
            return None
        return self._item(gcls, gtest, op, dtype, inst_cls, method, hit, mode, sop, gd)

    def _item(self, gcls: str, gtest: str, op: str | None, dtype: str, inst_cls: str, method: str,
              hit: tuple[int, int, TestEntry] | None, mode: Any, sop: Any, gd: Any) -> SpecItem:
        test = hit[2] if hit else None
        if mode == "mandatory_success":
            reason = issue = None
        elif test is not None:
            reason = test.reason or self.spec.test_reason(self.fi, hit[0], hit[1]) or \
                f"mode {mode} in {self.spec.path.name}"
            issue = test.issue
        else:
            reason = self.entry.reason or self.spec.comment_reason(("files", self.fi), "unlisted_test_mode") or \
                f"not listed in {self.spec.path.name} (unlisted_test_mode: {mode})"
            issue = self.entry.issue
        if mode != "mandatory_success" and (test is None or test.mode == "mandatory_success"):
            src = sop if sop is not None and sop.force_xfail else gd
            if src is not None and getattr(src, "force_xfail", False):
                reason = src.reason or self._force_comment(src) or f"force_xfail in global config for {src.name!r}"
                issue = src.issue
        inc = next((d for d in (test.edits.dtypes.include if test else []) if d.name == dtype), None)
        tol = effective_tolerance(dtype, inc.precision if inc else None, sop.precision(dtype) if sop else None,
                                  gd.precision if gd else None) if dtype != "none" else None
        generic = f"{gcls}::{gtest}"
        return SpecItem(id=f"{self.spec.suite}::{self.relpath}::{inst_cls}::{method}", suite=self.spec.suite,
                        template=generic, upstream=f"{self.relpath}::{generic}", op=op, dtype=dtype, mode=mode,
                        reason=reason, issue=issue, tags=list(test.tags) if test else [], tolerance=tol)

    def _force_comment(self, src: Any) -> str | None:
        """The YAML comment reason of a ``force_xfail`` op or dtype entry of ``global``."""
        g = self.spec.config.global_
        for key, lst in (("supported_ops", g.supported_ops or []), ("supported_dtypes", g.supported_dtypes)):
            for i, x in enumerate(lst):
                if x is src:
                    return self.spec.comment_reason(("global", key, i), "force_xfail")
        return None

    def cpu_move(self, gcls: str, gtest: str) -> list[str]:
        """``edits.functions.cpu_move`` names of the entry for ``gcls::gtest``."""
        hit = self.entry_for(gcls, gtest)
        return [n.name for n in hit[2].edits.functions.cpu_move] if hit else []
