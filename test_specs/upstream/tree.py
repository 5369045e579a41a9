"""Source-tree mode: upstream PyTorch test files run on "spyre" under a spec's rules.

A spec ``path:`` entry (``${TORCH_ROOT}/test/test_view_ops.py``, globs allowed; tokens in
``source_rules.substitute``) names upstream test files written with PyTorch's device-generic
mechanism (``common_device_type``: ``instantiate_device_type_tests``, ``@ops``, ``@dtypes``).
Nothing upstream is edited; this pytest plugin (``-p test_specs.upstream.tree``, with
``test_specs.plugin``) does, in the test process, what torch-spyre's ``OOTTestBase`` does:

1. ``pytest_configure``: ``spyre_backend.testing.prepare_device_type_tests()`` (before any test
   module imports ``common_device_type``, design §7) and ``PYTORCH_TESTING_DEVICE_ONLY_FOR=
   privateuse1``, so ``instantiate_device_type_tests`` makes only ``<Class>SPYRE`` classes;
   then ``instantiate.install``: while upstream builds each test's variants, ``@ops`` lists are
   kept to ``global.supported_ops``, ``edits.ops.include`` ops are injected, and every variant the
   rules reject (dtype, excluded op, mode ``skip``) is deleted before pytest sees it;
2. ``pytest_collection_modifyitems``: each remaining test ``<Class>SPYRE::<test>_spyre[_<dtype>]``
   (or ``<test>_<op>_spyre_<dtype>`` under ``@ops``; a plain ``TestCase`` test keeps its own
   class and name) gets its ``SpecItem`` from ``source_rules.FileRules.decide``: mode, reason
   (a YAML comment counts), tags as marks, the tolerance (set as the test's ``precision`` /
   ``rel_tol``, which ``TestCase.assertEqual`` uses as lower bounds, like ``toleranceOverride``)
   and ``functions.cpu_move`` (each named ``self`` method, e.g. ``assertEqual``, gets its tensor
   arguments moved to the CPU first);
3. diagnostics, each ``spec:line:col: warning: ...`` on the terminal (``--spyre-strict``: errors,
   and the session fails): a ``path`` that matches no file (``path_problems``), a name in
   ``names`` that matches no test of a collected file.

Item ids: ``<suite>::<relpath>::<Class>SPYRE::<instantiated test>`` (``relpath`` relative to the
checkout, e.g. ``test/test_view_ops.py``); ``dtype`` is ``"none"`` for tests without one.
``${TORCH_ROOT}``: ``--spyre-upstream``, else the ``TORCH_ROOT`` environment variable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from test_specs.format.loader import SpecError, load_spec
from test_specs.format.marks import apply_spec_item
from test_specs.reports import containment
from test_specs.upstream.instantiate import Rulebook
from test_specs.upstream.rules import FileRules, parse_variant, resolve, substitute
from test_specs.values.items import SpecItem, Tolerance

SPEC_ITEM = pytest.StashKey[SpecItem]()


def upstream_files(spec_paths: Iterable[str | Path], torch_root: Path) -> list[Path]:
    """Every file the specs' ``path:`` entries resolve to (deduplicated, in spec order)."""
    out: dict[Path, None] = {}
    for sp in spec_paths:
        for f in load_spec(sp).config.files:
            if f.path is not None:
                out.update((p.resolve(), None) for p in resolve(f.path, torch_root, Path(sp)))
    return list(out)


def path_problems(spec_paths: Iterable[str | Path], torch_root: Path) -> list[SpecError]:
    """A ``SpecError`` at every ``path`` of the specs that matches no file (or uses
    ``${TORCH_DEVICE_ROOT}`` with no device root known)."""
    out: list[SpecError] = []
    for sp in spec_paths:
        spec = load_spec(sp)
        for fi, f in enumerate(spec.config.files):
            if f.path is not None and not resolve(f.path, torch_root, Path(sp)):
                why = ("${TORCH_DEVICE_ROOT} is unknown: set TORCH_DEVICE_ROOT (the spec is in no git repository)"
                       if substitute(f.path, torch_root, Path(sp)) is None else f"matches no file under {torch_root}")
                out.append(spec.error(("files", fi, "path"), f"path {f.path!r} {why}"))
    return out


def rulebook(spec_paths: Iterable[str | Path], torch_root: Path) -> Rulebook:
    """The ``FileRules`` of every upstream file the specs name (the first entry naming a file wins)."""
    by_file: dict[Path, FileRules] = {}
    for sp in spec_paths:
        spec = load_spec(sp)
        for fi, entry in enumerate(spec.config.files):
            if entry.path is not None:
                for f in resolve(entry.path, torch_root, Path(sp)):
                    by_file.setdefault(f.resolve(), FileRules(spec, fi, os.path.relpath(f.resolve(), torch_root)))
    return Rulebook(by_file)


def torch_root(option: str | None) -> Path:
    """``${TORCH_ROOT}``: ``option`` (``--upstream``), else ``$TORCH_ROOT``, else the cwd."""
    return Path(option or os.environ.get("TORCH_ROOT") or ".").resolve()


def run_args(specs: list[str], torch_root: Path) -> tuple[list[str], list[str]]:
    """(targets, extra options) for a pytest run of ``specs`` plus their upstream files.

    ``--noconftest``: PyTorch's own ``test/conftest.py`` expects its CI plugins; this plugin
    does the device setup instead.
    """
    files = [str(p) for p in upstream_files(specs, torch_root)]
    extra = ["-p", "test_specs.upstream.tree", f"--spyre-upstream={torch_root}",
             f"--spyre-specs={os.pathsep.join(specs)}", "--noconftest"]
    return [*specs, *files], extra


def collect(spec_paths: list[Path], torch_root: Path, *, strict: bool = False) -> tuple[list[SpecItem], list[str]]:
    """``(items, problems)`` of the specs' ``path:`` entries, by ``pytest --collect-only`` in a
    subprocess (importing upstream test files registers the device; the caller stays clean);
    ``problems`` are the diagnostics (``spec:line:col: warning: ...``).  Raises ``RuntimeError``
    with pytest's output when collection fails (under ``strict``: when there is any problem)."""
    specs = [str(Path(p).resolve()) for p in spec_paths]
    targets, extra = run_args(specs, Path(torch_root).resolve())
    files = targets[len(specs):]
    if not files:
        problems = path_problems(specs, Path(torch_root).resolve())
        lines = [f"{e.file}:{e.line}:{e.col}: {'error' if strict else 'warning'}: {e.message}" for e in problems]
        if strict and lines:
            raise RuntimeError("spec problems (strict):\n" + "\n".join(lines))
        return [], lines
    with tempfile.TemporaryDirectory() as tmp:
        dump, probs = Path(tmp) / "items.jsonl", Path(tmp) / "problems.txt"
        cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "test_specs.plugin",
               "-p", "no:cacheprovider", *extra, f"--spyre-dump-items={dump}", f"--spyre-dump-problems={probs}",
               *(["--spyre-strict"] if strict else []), *files]
        root = str(Path(__file__).resolve().parents[2])  # the project root (test_specs/upstream/tree.py)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        if proc.returncode not in (0, 5) or not dump.exists():
            raise RuntimeError(f"collecting upstream tests failed ({proc.returncode}):\n"
                               f"{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        items = [SpecItem.model_validate(json.loads(ln)["item"])
                 for ln in dump.read_text(encoding="utf-8").splitlines() if ln]
        return items, probs.read_text(encoding="utf-8").splitlines() if probs.exists() else []


def collect_items(spec_paths: list[Path], torch_root: Path) -> list[SpecItem]:
    """The items of ``collect`` (diagnostics dropped)."""
    return collect(spec_paths, torch_root)[0]


# ----------------------------------------------------------------------------- the plugin


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("spyre-upstream", "spyre-relay source-tree mode")
    g.addoption("--spyre-upstream", metavar="PATH", default=None,
                help="PyTorch checkout (${TORCH_ROOT}; default $TORCH_ROOT)")
    g.addoption("--spyre-specs", metavar="FILES", default="", help="spec files (os.pathsep-separated)")
    g.addoption("--spyre-strict", action="store_true", default=False,
                help="a path matching no file or a name matching no test is an error, not a warning")
    g.addoption("--spyre-dump-problems", metavar="FILE", default=None, help="write the spec diagnostics to FILE")


_BOOK = pytest.StashKey[Rulebook]()


def _specs(config: pytest.Config) -> list[str]:
    return list(filter(None, config.getoption("--spyre-specs").split(os.pathsep)))


def pytest_configure(config: pytest.Config) -> None:
    os.environ["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = "privateuse1"
    if containment.is_controller(config):
        return
    if config.getoption("--spyre-device", "spyre") == "spyre":
        import spyre_backend.testing

        spyre_backend.testing.prepare_device_type_tests()
    book = rulebook(_specs(config), torch_root(config.getoption("--spyre-upstream")))
    config.stash[_BOOK] = book
    from test_specs.upstream.instantiate import install

    install(book)


def _cpu_move(fn: Any) -> Any:
    import torch
    from torch.utils._pytree import tree_map

    def moved(*args: Any, **kwargs: Any) -> Any:
        mv = lambda t: t.cpu() if isinstance(t, torch.Tensor) else t  # noqa: E731
        return fn(*tree_map(mv, args), **tree_map(mv, kwargs))

    return moved


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


def _generic(item: pytest.Item) -> tuple[str, str, str | None, str] | None:
    """(generic class, generic test, op, dtype) of a collected upstream test; a plain
    ``TestCase`` test (no device class) is its own generic test, without op or dtype."""
    cls = getattr(item, "cls", None)
    if cls is None:
        return None
    parsed = parse_variant(cls, item.name)
    if parsed is None and not cls.__name__.endswith("SPYRE"):
        return cls.__name__, item.name.split("[")[0], None, "none"
    return parsed


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    book = config.stash.get(_BOOK, None)
    if book is None:
        return
    keep, drop = [], []
    seen: set[int] = set()
    for item in items:
        rules = book.by_file.get(Path(str(item.path)).resolve())
        parsed = _generic(item) if rules is not None else None
        if rules is None or parsed is None:
            (keep if rules is None else drop).append(item)
            continue
        seen.add(id(rules))
        gcls, gtest, op, dtype = parsed
        it = rules.decide(gcls, gtest, op, dtype, item.cls.__name__, item.name)
        if it is None:
            drop.append(item)
            continue
        _install(item, it, rules.cpu_move(gcls, gtest))
        keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
    _diagnose(config, [r for r in book.rules() if id(r) in seen])


def _diagnose(config: pytest.Config, collected: list[FileRules]) -> None:
    """Warnings (errors under ``--spyre-strict``): paths matching no file, names matching no test."""
    specs, root = _specs(config), torch_root(config.getoption("--spyre-upstream"))
    problems = path_problems(specs, root)
    for rules in collected:
        problems += [rules.spec.error(loc, f"name {name!r} matches no test in {rules.relpath}")
                     for loc, name in rules.unmatched()]
    strict = config.getoption("--spyre-strict")
    lines = [f"{e.file}:{e.line}:{e.col}: {'error' if strict else 'warning'}: {e.message}"
             for e in sorted(set(problems))]
    config.stash[_PROBLEMS] = lines
    dump = config.getoption("--spyre-dump-problems")
    if dump:
        Path(dump).write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    if lines and strict:
        raise pytest.UsageError("spec problems (--spyre-strict):\n" + "\n".join(lines))


_PROBLEMS = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The spec diagnostics and how many variants the rules did not build, by why."""
    book = config.stash.get(_BOOK, None)
    if book is None:
        return
    for line in config.stash.get(_PROBLEMS, []):
        terminalreporter.write_line(line)
    dropped: dict[str, int] = {}
    for r in book.rules():
        for k, n in r.dropped.items():
            dropped[k] = dropped.get(k, 0) + n
    if dropped:
        terminalreporter.write_line("spyre specs: variants not built: " +
                                    ", ".join(f"{n} {k}" for k, n in sorted(dropped.items())))
