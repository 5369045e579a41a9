"""pytest plugin: spec YAML files become test items, one per ``SpecItem``.

Load it explicitly (it is not auto-registered)::

    python -m pytest -p test_specs.plugin test_specs/specs/opinfo_core.yaml \
        --spyre-device=cpu --spyre-select=ids.txt --spyre-results=results.jsonl

- Collection (pattern: pytest ``doc/en/example/nonpython``): any ``*.yaml``/``*.yml`` whose text
  contains ``test_suite_config`` is loaded and expanded (``expand.expand_spec``).
- ``--spyre-select=FILE``: one item id per line; every other item is reported as deselected.
- ``--spyre-device=spyre|cpu`` (default ``spyre``; ``spyre`` imports ``spyre_backend``).
- ``--spyre-results=FILE``: appends JSON lines, flushed at once so a parent can follow live:
  ``{"event": "collected", "items": [{id, upstream, op, variant, module, dtype, mode}]}`` after
  collection, ``{"event": "start", "id"}`` when a test starts, then ``{"event": "result", "id", "outcome",
  "duration_ms", "attempts", "message"}`` when it finishes; ``outcome`` is one of
  ``results.OUTCOMES`` except ``crashed`` (a dead process writes nothing; the runner infers it).
- Mode (torch-spyre semantics): ``mandatory_success`` must pass; ``xfail`` → non-strict
  ``pytest.mark.xfail`` (fail = xfailed, pass = xpassed); ``xfail_strict`` → strict (pass =
  failed); ``skip`` → skipped with its reason.  Tags become marks (registered on the fly).
- ``user_properties`` carry id/op/module/dtype/mode/upstream/reason/issue into JUnit XML.
- Upstream test files (source-tree mode) get their ``SpecItem`` from ``test_specs.upstream``;
  ``--spyre-select`` and ``--spyre-results`` treat them like spec items (``spec_item_of``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from test_specs.items import SpecItem, Tolerance
from test_specs.marks import apply_spec_item
from test_specs.precedence import DEFAULT_TOLERANCE
from test_specs.template_kit import TemplateFailure, fast_sample_inputs, sample_cap
from test_specs.templates import TEMPLATES, load_extra_templates


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("spyre", "spyre-relay spec items")
    g.addoption("--spyre-select", metavar="FILE", default=None, help="run only the item ids listed in FILE (one per line)")
    g.addoption("--spyre-device", choices=("spyre", "cpu"), default="spyre", help="device under test (default: spyre)")
    g.addoption("--spyre-results", metavar="FILE", default=None, help="append one JSON line per started/finished test to FILE")


def pytest_configure(config: pytest.Config) -> None:
    load_extra_templates()
    if config.getoption("--spyre-device") == "spyre":
        try:
            import spyre_backend  # noqa: F401  (registers the PrivateUse1 device "spyre")
        except Exception as e:  # a broken backend is a usage error, not 100 failures
            raise pytest.UsageError(f"--spyre-device=spyre: cannot import spyre_backend: {type(e).__name__}: {e}") from e
    path = config.getoption("--spyre-results")
    if path:
        config.stash[_RESULTS] = _ResultWriter(Path(path))
        config.pluginmanager.register(config.stash[_RESULTS], "spyre-results")


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
    if not select:
        return
    wanted = {ln.strip() for ln in Path(select).read_text(encoding="utf-8").splitlines() if ln.strip()}
    keep = [i for i in items if (it := spec_item_of(i)) is not None and it.id in wanted]
    drop = [i for i in items if i not in keep]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


def pytest_collection_finish(session: pytest.Session) -> None:
    writer = session.config.stash.get(_RESULTS, None)
    if writer is not None:
        pairs = [(it, i.nodeid) for i in session.items if (it := spec_item_of(i)) is not None]
        writer.collected([p[0] for p in pairs], [p[1] for p in pairs])


def spec_item_of(item: pytest.Item) -> SpecItem | None:
    """The ``SpecItem`` behind a pytest item: a spec YAML item, or an upstream test given rules
    by ``test_specs.upstream`` (source-tree mode); ``None`` for anything else."""
    if isinstance(item, SpecTestItem):
        return item.spec_item
    from test_specs.upstream import SPEC_ITEM

    return item.stash.get(SPEC_ITEM, None)


class SpecFile(pytest.File):
    """A spec YAML file; yields one ``SpecTestItem`` per expanded ``SpecItem``."""

    def collect(self):  # type: ignore[override]
        from test_specs.expand import expand_spec
        from test_specs.loader import load_spec

        for it in expand_spec(load_spec(self.path)):
            yield SpecTestItem.from_parent(self, name=it.id.split("::", 1)[1], spec_item=it)


class SpecTestItem(pytest.Item):
    """One spec item; ``runtest`` calls its template on the device chosen by ``--spyre-device``."""

    def __init__(self, *, spec_item: SpecItem, **kw: Any) -> None:
        super().__init__(**kw)
        self.spec_item = spec_item
        it = spec_item
        apply_spec_item(self, it)

    def runtest(self) -> None:
        import torch

        from test_specs.expand import module_db, op_db

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
        if isinstance(excinfo.value, TemplateFailure):
            return head + f"  {excinfo.value}"
        tb = excinfo.getrepr(style="short", chain=False)
        return head + f"  {excinfo.typename}: {excinfo.value}\n{tb}"

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.spec_item.id  # skip reports need a line number


_RESULTS = pytest.StashKey["_ResultWriter"]()


class _ResultWriter:
    """Writes the ``--spyre-results`` JSON lines; one ``result`` line per item, after reruns."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f = path.open("a", encoding="utf-8")
        self._state: dict[str, dict[str, Any]] = {}
        self._ids: dict[str, str] = {}  # nodeid -> item id

    def collected(self, items: list[SpecItem], nodeids: list[str]) -> None:
        """One ``collected`` line with the metadata of every selected item (before any runs)."""
        self._ids.update(zip(nodeids, (it.id for it in items)))
        keys = ("id", "upstream", "op", "variant", "module", "dtype", "mode")
        self._write({"event": "collected", "items": [it.model_dump(include=set(keys)) for it in items]})

    def _write(self, obj: dict[str, Any]) -> None:
        self._f.write(json.dumps(obj) + "\n")
        self._f.flush()

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        # Called before each attempt, also under pytest-rerunfailures (which logs an attempt's
        # setup/call reports only after it ran), so a crash inside the test is attributable.
        st = self._state.setdefault(nodeid, {"reports": [], "reruns": 0})
        st["reports"], st["rerun"] = [], False
        self._write({"event": "start", "id": self._ids.get(nodeid, nodeid)})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        st = self._state.setdefault(report.nodeid, {"reports": [], "reruns": 0})
        if report.outcome == "rerun":  # this attempt failed and will be retried
            st["rerun"] = True
            return
        st["reports"].append(report)

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        st = self._state.get(nodeid)
        if not st:
            return
        if st.get("rerun"):
            st["reruns"] += 1
            return
        self._state.pop(nodeid)
        reports: list[pytest.TestReport] = st["reports"]
        if not reports:
            return
        item_id = self._ids.get(nodeid) or dict(reports[0].user_properties).get("id", nodeid)
        outcome, message = _outcome(reports)
        if outcome == "passed" and st["reruns"]:
            outcome = "flaky"
        self._write({"event": "result", "id": item_id, "outcome": outcome,
                     "duration_ms": round(sum(r.duration for r in reports) * 1000.0, 3),
                     "attempts": 1 + st["reruns"], "message": message})

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self._f.close()


def _first_line(text: str) -> str | None:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # Our repr_failure puts the id first; the informative line is the failure itself.
    for ln in lines:
        if ln.startswith(("upstream:", "tolerance:")) or "::" in ln and " " not in ln:
            continue
        return ln[:500]
    return lines[0][:500] if lines else None


def _outcome(reports: list[pytest.TestReport]) -> tuple[str, str | None]:
    """Outcome of one attempt from its setup/call/teardown reports (pytest's own rules)."""
    for r in reports:
        wasxfail = getattr(r, "wasxfail", None)
        if r.skipped and wasxfail is not None:
            return "xfailed", _first_line(r.longreprtext) or wasxfail or None
        if r.passed and wasxfail is not None and r.when == "call":
            return "xpassed", wasxfail or None
        if r.skipped:
            reason = r.longrepr[2] if isinstance(r.longrepr, tuple) else str(r.longrepr)
            return "skipped", reason.removeprefix("Skipped: ")
        if r.failed:
            text = r.longreprtext
            if "Timeout" in text and ("Failed: Timeout" in text or "+++ Timeout" in text):
                return "timed_out", _first_line(text[text.find("Timeout"):])
            if r.when == "call" and "[XPASS(strict)]" in text:
                return "failed", text.strip()
            return "failed", _first_line(text)
    return "passed", None
