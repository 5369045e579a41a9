"""Source-tree mode: upstream PyTorch test files run on "spyre" under a spec's rules.

A spec ``path:`` entry (``${TORCH_ROOT}/test/test_view_ops.py``, globs allowed) names upstream
test files written with PyTorch's device-generic mechanism (``common_device_type``:
``instantiate_device_type_tests``, ``@ops``, ``@dtypes``).  Nothing upstream is edited; this
pytest plugin (``-p test_specs.upstream``, with ``test_specs.plugin``) does, in the test process:

1. ``pytest_configure``: ``spyre_backend.testing.prepare_device_type_tests()`` (before any test
   module imports ``common_device_type``, design §7) and ``PYTORCH_TESTING_DEVICE_ONLY_FOR=
   privateuse1``, so ``instantiate_device_type_tests`` makes only ``<Class>SPYRE`` classes
   (``PrivateUse1TestBase``; an extra base from ``TORCH_TEST_DEVICES`` is honoured as usual);
2. ``pytest_collection_modifyitems``: each instantiated test ``<Class>SPYRE::<test>_spyre[_<dtype>]``
   (or ``<test>_<op>_spyre_<dtype>`` under ``@ops``) is mapped to its generic name
   ``<Class>::<test>``, its op and dtype, and given the spec's rules (same precedence as
   ``expand``, torch-spyre RFC 1287): mode (listed test's ``mode`` or the file's
   ``unlisted_test_mode``; ``force_xfail`` turns ``mandatory_success`` into ``xfail``), the
   dtype filter (``global.supported_dtypes`` ∩ op dtypes ∪ include − exclude; a test outside it
   is deselected), op include/exclude, the tolerance (set as the test's ``precision`` /
   ``rel_tol``, which ``TestCase.assertEqual`` uses as lower bounds, like ``toleranceOverride``)
   and ``functions.cpu_move`` (each named ``self`` method, e.g. ``assertEqual``, gets its tensor
   arguments moved to the CPU first).

Item ids: ``<suite>::<relpath>::<Class>SPYRE::<instantiated test>`` (``relpath`` relative to the
checkout, e.g. ``test/test_view_ops.py``); ``dtype`` is ``"none"`` for tests without one.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from test_specs import containment
from test_specs.items import SpecItem, Tolerance
from test_specs.loader import load_spec
from test_specs.marks import apply_spec_item
from test_specs.precedence import effective_mode, effective_tolerance

SPEC_ITEM = pytest.StashKey[SpecItem]()
DEVICE_SUFFIX = "SPYRE"


def resolve(path: str, torch_root: Path) -> list[Path]:
    """``path`` with ``${TORCH_ROOT}`` (and ``$TORCH_ROOT``) replaced, globs expanded (sorted);
    a relative result is taken relative to ``torch_root``."""
    p = path.replace("${TORCH_ROOT}", str(torch_root)).replace("$TORCH_ROOT", str(torch_root))
    if not os.path.isabs(p):
        p = str(torch_root / p)
    return sorted(Path(x) for x in glob.glob(p, recursive=True))


def upstream_files(spec_paths: Iterable[str | Path], torch_root: Path) -> list[Path]:
    """Every file the specs' ``path:`` entries resolve to (deduplicated, in spec order)."""
    out: dict[Path, None] = {}
    for sp in spec_paths:
        for f in load_spec(sp).config.files:
            if f.path is not None:
                out.update((p.resolve(), None) for p in resolve(f.path, torch_root))
    return list(out)


def run_args(specs: list[str], torch_root: Path) -> tuple[list[str], list[str]]:
    """(targets, extra options) for a pytest run of ``specs`` plus their upstream files.

    ``--noconftest``: PyTorch's own ``test/conftest.py`` expects its CI plugins; this plugin
    does the device setup instead.
    """
    files = [str(p) for p in upstream_files(specs, torch_root)]
    extra = ["-p", "test_specs.upstream", f"--spyre-upstream={torch_root}",
             f"--spyre-specs={os.pathsep.join(specs)}", "--noconftest"]
    return [*specs, *files], extra


def collect_items(spec_paths: list[Path], torch_root: Path) -> list[SpecItem]:
    """The ``SpecItem``s of the specs' ``path:`` entries, by ``pytest --collect-only`` in a
    subprocess (importing upstream test files registers the device; the caller stays clean).
    Raises ``RuntimeError`` with pytest's output when collection fails."""
    specs = [str(Path(p).resolve()) for p in spec_paths]
    targets, extra = run_args(specs, Path(torch_root).resolve())
    files = targets[len(specs):]
    if not files:
        return []
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "items.jsonl"
        cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "test_specs.plugin",
               "-p", "no:cacheprovider", *extra, f"--spyre-dump-items={dump}", *files]
        root = str(Path(__file__).resolve().parent.parent)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        if proc.returncode not in (0, 5) or not dump.exists():
            raise RuntimeError(f"collecting upstream tests failed ({proc.returncode}):\n"
                               f"{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        return [SpecItem.model_validate(json.loads(ln)["item"]) for ln in dump.read_text(encoding="utf-8").splitlines()
                if ln]


# ----------------------------------------------------------------------------- the plugin


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("spyre-upstream", "spyre-relay source-tree mode")
    g.addoption("--spyre-upstream", metavar="PATH", default=None, help="PyTorch checkout (${TORCH_ROOT})")
    g.addoption("--spyre-specs", metavar="FILES", default="", help="spec files (os.pathsep-separated)")


def pytest_configure(config: pytest.Config) -> None:
    os.environ["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = "privateuse1"
    if config.getoption("--spyre-device", "spyre") == "spyre" and not containment.is_controller(config):
        import spyre_backend.testing

        spyre_backend.testing.prepare_device_type_tests()


def _parse(cls: type, name: str) -> tuple[str, str, str | None, str] | None:
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


def _cpu_move(fn: Any) -> Any:
    import torch
    from torch.utils._pytree import tree_map

    def moved(*args: Any, **kwargs: Any) -> Any:
        mv = lambda t: t.cpu() if isinstance(t, torch.Tensor) else t  # noqa: E731
        return fn(*tree_map(mv, args), **tree_map(mv, kwargs))

    return moved


class _Rules:
    """The spec rules for one upstream file: look-ups by generic name, op and dtype."""

    def __init__(self, spec: Any, entry: Any, relpath: str) -> None:
        self.spec, self.entry, self.relpath = spec, entry, relpath

    def apply(self, item: pytest.Item) -> SpecItem | None:
        parsed = _parse(item.cls, item.name) if getattr(item, "cls", None) else None
        if parsed is None:
            return None
        gcls, gtest, op, dtype = parsed
        generic = f"{gcls}::{gtest}"
        g = self.spec.config.global_
        test = next((t for t in self.entry.tests if generic in t.names or gtest in t.names), None)
        edits = test.edits if test else None
        sop = g.op(*op.split(".", 1)) if op else None
        names = lambda ns: {n.name for n in ns}  # noqa: E731
        if edits and op and ((edits.ops.include and not {op, op.split(".")[0]} & names(edits.ops.include))
                             or {op, op.split(".")[0]} & names(edits.ops.exclude)):
            return None
        if dtype != "none":
            allowed = {d.name for d in g.supported_dtypes} or {dtype}
            if sop and sop.dtypes:
                allowed &= {d.name for d in sop.dtypes}
            allowed |= {d.name for d in edits.dtypes.include} if edits else set()
            allowed -= {d.name for d in edits.dtypes.exclude} if edits else set()
            if dtype not in allowed:
                return None
        base = test.mode if test else self.entry.unlisted_test_mode
        gd = g.dtype(dtype) if dtype != "none" else None
        mode = effective_mode(base, bool(sop and sop.force_xfail) or bool(gd and gd.force_xfail))
        reason = (test.reason if test else self.entry.reason) or f"mode {mode} in {self.spec.path.name}"
        issue = test.issue if test else self.entry.issue
        inc = next((d for d in (edits.dtypes.include if edits else []) if d.name == dtype), None)
        tol = effective_tolerance(dtype, inc.precision if inc else None, sop.precision(dtype) if sop else None,
                                  gd.precision if gd else None) if dtype != "none" else None
        cpu_move = [n.name for n in edits.functions.cpu_move] if edits else []
        it = SpecItem(id=f"{self.spec.suite}::{self.relpath}::{item.cls.__name__}::{item.name}", suite=self.spec.suite,
                      template=generic, upstream=f"{self.relpath}::{generic}", op=op, dtype=dtype, mode=mode,
                      reason=reason if mode != "mandatory_success" else None,
                      issue=issue if mode != "mandatory_success" else None, tags=list(test.tags) if test else [],
                      tolerance=tol)
        _install(item, it, cpu_move)
        return it


def _install(item: pytest.Item, it: SpecItem, cpu_move: list[str]) -> None:
    """Marks (mode, tags), JUnit properties, tolerance and cpu_move for one upstream test."""
    item.stash[SPEC_ITEM] = it
    apply_spec_item(item, it)
    item.stash[_EDITS] = (it.tolerance, cpu_move)


_EDITS = pytest.StashKey[tuple[Tolerance | None, list[str]]]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    """After pytest made the ``TestCase`` instance: tolerance and cpu_move for this test only.

    PyTorch's ``TestCase.__init__`` binds (and may wrap) the test method on the instance, so the
    edits wrap the instance attribute; ``instantiated_test`` reads ``self.precision`` /
    ``self.rel_tol`` as its starting values (common_device_type).
    """
    yield
    edits = item.stash.get(_EDITS, None)
    inst = getattr(item, "instance", None) or getattr(item, "_testcase", None)
    if edits is None or inst is None:
        return
    tol, cpu_move = edits
    if tol is not None:  # lower bounds for assertEqual, as toleranceOverride sets them
        inst.precision, inst.rel_tol = max(inst.precision, tol.atol), max(inst.rel_tol, tol.rtol)
    for name in cpu_move:
        if hasattr(inst, name):
            setattr(inst, name, _cpu_move(getattr(inst, name)))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(config.getoption("--spyre-upstream") or ".").resolve()
    by_file: dict[Path, _Rules] = {}
    for sp in filter(None, config.getoption("--spyre-specs").split(os.pathsep)):
        spec = load_spec(sp)
        for entry in spec.config.files:
            if entry.path is not None:
                for f in resolve(entry.path, root):
                    rel = os.path.relpath(f.resolve(), root)
                    by_file.setdefault(f.resolve(), _Rules(spec, entry, rel))
    keep, drop = [], []
    for item in items:
        rules = by_file.get(Path(str(item.path)).resolve())
        if rules is None:
            keep.append(item)
            continue
        (keep if rules.apply(item) is not None else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
