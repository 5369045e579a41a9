"""pytest plugin: spec YAML files become test items, one per ``SpecItem``.

Load it explicitly (it is not auto-registered)::

    python -m pytest -p test_specs.plugin test_specs/specs/opinfo_core.yaml \
        --spyre-device=cpu --spyre-select=ids.txt --report-log=reportlog.jsonl

- Collection (pattern: pytest ``doc/en/example/nonpython``): any ``*.yaml``/``*.yml`` whose text
  contains ``test_suite_config`` is loaded and expanded (``expand.expand_spec``).
- ``--spyre-select=FILE``: one item id per line; every other item is reported as deselected.
  ``--spyre-ordered``: the selected items run in the file's order (the runner writes them longest
  first, so xdist's dynamic scheduling ends its workers together) instead of collection order.
- ``--spyre-modes=FILE``: the run's mode per item id (``test_specs.values.planned``, JSON): a selected
  item runs in that mode (e.g. stage 3's predicted ``xfail``) instead of its spec's.
- ``--spyre-device=spyre|cpu`` (default ``spyre``; ``spyre`` imports ``spyre_backend``).
- ``--spyre-dump-items=FILE``: after collection, one JSON line per selected item,
  ``{"nodeid", "item": SpecItem}`` (written whole, then renamed into place: xdist workers each
  write the same file).  Per-test records are pytest-reportlog's (``--report-log``), read by
  ``test_specs.reports.records``; JUnit XML (``--junitxml``) carries the same metadata as properties.
- ``--spyre-hang-kill=SECONDS``: crash and hang containment under xdist (``containment``).
- Mode (torch-spyre semantics): ``mandatory_success`` must pass; ``xfail`` → non-strict
  ``pytest.mark.xfail`` (fail = xfailed, pass = xpassed); ``xfail_strict`` → strict (pass =
  failed); ``skip`` → skipped with its reason.  Tags become marks (registered on the fly).
- ``user_properties`` carry id/op/module/dtype/mode/upstream/reason/issue into JUnit XML.
- ``path:`` entries carrying captured inputs (model-ops ``sample_inputs_func``, module tests
  ``module_path``) also yield one ``CapturedTestItem`` per captured call/module
  (``test_specs.expand.captured_run``): those formats run from the spec itself.
- Upstream test files (source-tree mode) get their ``SpecItem`` from ``test_specs.upstream.tree``;
  ``--spyre-select`` and ``--spyre-dump-items`` treat them like spec items (``spec_item_of``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from test_specs.format.marks import apply_spec_item, set_mode
from test_specs.format.precedence import DEFAULT_TOLERANCE
from test_specs.reports import containment
from test_specs.values.items import SpecItem, Tolerance
from test_specs.values.planned import overridden, read_rules


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("spyre", "spyre-relay spec items")
    g.addoption("--spyre-select", metavar="FILE", default=None,
                help="run only the item ids listed in FILE (one per line)")
    g.addoption("--spyre-ordered", action="store_true", default=False,
                help="run the selected items in the order of the --spyre-select file")
    g.addoption("--spyre-modes", metavar="FILE", default=None,
                help="JSON {item id: {mode, reason}}: run these items in these modes")
    g.addoption("--spyre-device", choices=("spyre", "cpu"), default="spyre", help="device under test (default: spyre)")
    g.addoption("--spyre-dump-items", metavar="FILE", default=None,
                help="write the selected items as JSON lines {nodeid, item} to FILE")
    g.addoption("--spyre-hang-kill", metavar="SECONDS", type=float, default=0.0,
                help="under xdist: end a worker whose test call runs this long (0: never)")


def pytest_configure(config: pytest.Config) -> None:
    containment.install(config, config.getoption("--spyre-hang-kill"))
    if containment.is_controller(config):
        return  # an xdist controller runs no test: no templates, no torch, no device
    # The templates import torch (~2 s of CPU): only processes that collect or run items pay it.
    from test_specs.templates.registry import load_extra_templates

    load_extra_templates()
    if config.getoption("--spyre-device") == "spyre":
        try:
            import spyre_backend  # noqa: F401  (registers the PrivateUse1 device "spyre")
        except Exception as e:  # a broken backend is a usage error, not 100 failures
            raise pytest.UsageError(
                f"--spyre-device=spyre: cannot import spyre_backend: {type(e).__name__}: {e}") from e


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tell the simulated device a test attempt starts (its first run or a pytest-rerunfailures
    rerun): an injected ``flaky=P`` fault draws once per attempt (``spyre_backend.faults``)."""
    if item.config.getoption("--spyre-device") == "spyre":
        from spyre_backend.faults import begin_attempt

        begin_attempt(item.nodeid)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix in (".yaml", ".yml"):
        try:
            if "test_suite_config" in file_path.read_text(encoding="utf-8"):
                return SpecFile.from_parent(parent, path=file_path)
        except (OSError, UnicodeDecodeError):  # unreadable or not text: not a spec
            return None
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    select = config.getoption("--spyre-select")
    if select:
        _select(config, items, Path(select))
    modes = config.getoption("--spyre-modes")
    if modes:
        rules = read_rules(Path(modes))
        for item in items:
            it = spec_item_of(item)
            new = overridden(it, rules.get(it.id)) if it is not None else None
            if new is not None:
                _set_spec_item(item, new)
                set_mode(item, new)


def _select(config: pytest.Config, items: list[pytest.Item], select: Path) -> None:
    lines = [ln.strip() for ln in select.read_text(encoding="utf-8").splitlines() if ln.strip()]
    position = {item_id: n for n, item_id in reversed(list(enumerate(lines)))}
    keep = [i for i in items if (it := spec_item_of(i)) is not None and it.id in position]
    kept = set(keep)
    drop = [i for i in items if i not in kept]
    if drop:
        config.hook.pytest_deselected(items=drop)
    if config.getoption("--spyre-ordered"):
        keep.sort(key=lambda i: position[spec_item_of(i).id])  # type: ignore[union-attr]
    items[:] = keep


def pytest_collection_finish(session: pytest.Session) -> None:
    path = session.config.getoption("--spyre-dump-items")
    if not path:
        return
    lines = [json.dumps({"nodeid": i.nodeid, "item": it.model_dump(mode="json")}) + "\n"
             for i in session.items if (it := spec_item_of(i)) is not None]
    tmp = Path(f"{path}.{os.getpid()}.tmp")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(path)


def spec_item_of(item: pytest.Item) -> SpecItem | None:
    """The ``SpecItem`` behind a pytest item: a spec YAML item, or an upstream test given rules
    by ``test_specs.upstream.tree`` (source-tree mode); ``None`` for anything else."""
    if isinstance(item, SpecTestItem):
        return item.spec_item
    from test_specs.upstream.tree import SPEC_ITEM

    return item.stash.get(SPEC_ITEM, None)


def _set_spec_item(item: pytest.Item, it: SpecItem) -> None:
    if isinstance(item, SpecTestItem):
        item.spec_item = it
    else:
        from test_specs.upstream.tree import SPEC_ITEM

        item.stash[SPEC_ITEM] = it


class SpecFile(pytest.File):
    """A spec YAML file; yields one ``SpecTestItem`` per expanded ``SpecItem``."""

    def collect(self):  # type: ignore[override]
        from test_specs.expand.universe import expand_spec
        from test_specs.format.loader import load_spec

        spec = load_spec(self.path)
        for it in expand_spec(spec):
            yield SpecTestItem.from_parent(self, name=it.id.split("::", 1)[1], spec_item=it)
        if any(f.path is not None for f in spec.config.files):
            from test_specs.expand.captured_run import captured_items

            seed = spec.config.global_.input_config.seed
            for it, entry in captured_items(spec):
                yield CapturedTestItem.from_parent(self, name=it.id.split("::", 1)[1], spec_item=it,
                                                   entry=entry, seed=seed)


class SpecTestItem(pytest.Item):
    """One spec item; ``runtest`` calls its template on the device chosen by ``--spyre-device``."""

    def __init__(self, *, spec_item: SpecItem, **kw: Any) -> None:
        super().__init__(**kw)
        self.spec_item = spec_item
        it = spec_item
        apply_spec_item(self, it)

    def runtest(self) -> None:
        import torch

        from test_specs.expand.universe import module_db, op_db
        from test_specs.templates.kit import fast_sample_inputs, sample_cap
        from test_specs.templates.registry import TEMPLATES

        it = self.spec_item
        template = TEMPLATES[it.template]
        if it.module is not None:
            subject = next(m for m in module_db() if m.name == it.module)
        else:
            subject = next(o for o in op_db() if o.name == it.op and (o.variant_test_name or None) == it.variant)
        tol = it.tolerance or DEFAULT_TOLERANCE.get(it.dtype, Tolerance(atol=0.0, rtol=0.0))
        with sample_cap(it.max_samples), fast_sample_inputs():
            template.fn(subject, getattr(torch, it.dtype), self.config.getoption("--spyre-device"), tol)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        it = self.spec_item
        head = f"{it.id}\n  upstream: {it.upstream}\n  tolerance: {it.tolerance}\n"
        from test_specs.templates.kit import TemplateFailure

        if isinstance(excinfo.value, TemplateFailure):
            return head + f"  {excinfo.value}"
        tb = excinfo.getrepr(style="short", chain=False)
        return head + f"  {excinfo.typename}: {excinfo.value}\n{tb}"

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.spec_item.id  # skip reports need a line number


class CapturedTestItem(SpecTestItem):
    """A captured op call (model-ops config) or module (module-tests config) of a spec, run on
    the ``--spyre-device`` against the CPU (``test_specs.expand.captured_run``)."""

    def __init__(self, *, entry: Any, seed: int | None, **kw: Any) -> None:
        super().__init__(**kw)
        self.entry, self.seed = entry, seed

    def runtest(self) -> None:
        from test_specs.expand.captured_run import run_module, run_op

        it = self.spec_item
        tol = it.tolerance or DEFAULT_TOLERANCE.get(it.dtype, Tolerance(atol=0.0, rtol=0.0))
        device = self.config.getoption("--spyre-device")
        if it.module is not None:
            run_module(self.entry, it.dtype, device, self.seed, tol)
        else:
            run_op(self.entry, device, self.seed, tol)
