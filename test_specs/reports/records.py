"""Per-test results from a pytest-reportlog file, read while pytest is still writing it.

pytest-reportlog (``--report-log=FILE``) writes one JSON line per pytest report as it happens
(``{"$report_type": "TestReport", "nodeid", "when", "outcome", "longrepr", "duration",
"user_properties", "wasxfail"?, ...}``; durations in seconds), flushed at once; under xdist the
controller writes it for every worker.  ``ReportLog.poll()`` turns the lines written so far into
one ``TestResult`` per finished test:

- an attempt ends with its ``teardown`` report or with xdist's crash report (``when == "???"``,
  made by the controller when a worker dies inside the test; ``containment`` annotates it); an
  attempt with a report whose outcome is ``rerun`` (pytest-rerunfailures marks the failing
  phase so and runs the test again) counts as a rerun, and the next attempt follows;
- the outcome of the last attempt follows pytest's own rules (``outcome_of``); a pass after a
  rerun is ``flaky`` (PyTorch CI's convention); ``attempts`` = 1 + reruns;
- ``duration_ms`` is the sum of the last attempt's report durations, in milliseconds.

Item metadata (id, upstream test, op, module, dtype, mode) comes from the items file the plugin
writes at collection (``--spyre-dump-items``; lines ``{"nodeid", "item": SpecItem}``), so a
test whose worker died still gets its metadata, with the reports' ``user_properties`` and the id
itself (``_meta_from_id``) as fallbacks.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from test_specs.values.results import BAD_OUTCOMES, TestResult

#: xdist's ``when`` for the report it makes when a worker dies inside a test.
CRASH_WHEN = "???"


class Tail:
    """Incremental reader of a JSON-lines file that another process appends to (tolerates a
    half-written last line, which is read on the next call)."""

    def __init__(self, path: Path) -> None:
        self.path, self.pos, self.buf = path, 0, ""

    def read(self) -> list[dict[str, Any]]:
        """The complete lines appended since the last call, parsed; unparsable lines skipped."""
        if not self.path.exists():
            return []
        with self.path.open("r", encoding="utf-8") as f:
            f.seek(self.pos)
            chunk = f.read()
            self.pos = f.tell()
        self.buf += chunk
        *lines, self.buf = self.buf.split("\n")
        out = []
        for ln in lines:
            try:
                out.append(json.loads(ln))
            except json.JSONDecodeError:
                continue
        return out


def read_items(path: Path) -> dict[str, dict[str, Any]]:
    """``{nodeid: SpecItem as a dict}`` from a ``--spyre-dump-items`` file (``{}`` if absent)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    out = {}
    for ln in lines:
        if ln.strip():
            rec = json.loads(ln)
            out[rec["nodeid"]] = rec["item"]
    return out


def exit_status(returncode: int | None) -> str:
    """``killed by SIGABRT`` / ``exit code 1`` / ``exit status unknown`` for a process's return code
    (negative: killed by that signal, as ``subprocess`` reports it)."""
    if returncode is None:
        return "exit status unknown"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


def _meta_from_id(item_id: str) -> dict[str, Any]:
    """Best-effort metadata from an id ``suite::Class::method[subject-dtype]`` (no spec needed)."""
    head, _, rest = item_id.partition("[")
    template = head.split("::", 1)[1] if "::" in head else head
    subject, _, dtype = rest.rstrip("]").rpartition("-")
    return {"upstream": template, "op": subject or None, "dtype": dtype or None}


def make_result(item_id: str, meta: dict[str, Any], **fields: Any) -> TestResult:
    """A ``TestResult`` for ``item_id``: metadata from ``meta`` (a ``SpecItem`` dict or JUnit-style
    properties), else guessed from the id; ``fields`` = outcome, duration_ms, attempts, message,
    detail."""
    m = {**_meta_from_id(item_id), **{k: v for k, v in meta.items() if v is not None}}
    return TestResult(id=item_id, upstream=m.get("upstream") or "", op=m.get("op"), module=m.get("module"),
                      dtype=m.get("dtype"), mode=m.get("mode") or "mandatory_success", **fields)


def _text(longrepr: Any) -> str:
    """The text of a serialized ``longrepr``: a string as is; a failure's crash message and its
    traceback entries' lines; a skip's reason."""
    if longrepr is None:
        return ""
    if isinstance(longrepr, str):
        return longrepr
    if isinstance(longrepr, list):  # a skip: (path, lineno, reason)
        return str(longrepr[2]) if len(longrepr) == 3 else " ".join(map(str, longrepr))
    parts: list[str] = []
    crash = longrepr.get("reprcrash") or {}
    if crash.get("message"):
        parts.append(crash["message"])
    for entry in (longrepr.get("reprtraceback") or {}).get("reprentries", []):
        parts.extend((entry.get("data") or {}).get("lines", []))
    return "\n".join(parts)


def first_line(text: str) -> str | None:
    """The informative first line of a failure text (at most 500 characters)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # Our repr_failure puts the id first; the informative line is the failure itself.
    for ln in lines:
        if ln.startswith(("upstream:", "tolerance:")) or "::" in ln and " " not in ln:
            continue
        return ln[:500]
    return lines[0][:500] if lines else None


def outcome_of(reports: list[dict[str, Any]]) -> tuple[str, str | None]:
    """(outcome, message) of one attempt from its reports (pytest's own rules; a crash report
    is ``crashed``, or ``timed_out`` when ``containment`` says the hang watchdog killed it)."""
    for r in reports:
        text, wasxfail, outcome = _text(r.get("longrepr")), r.get("wasxfail"), r.get("outcome")
        if r.get("when") == CRASH_WHEN:
            return ("timed_out" if text.startswith("Timeout") else "crashed"), text
        if outcome == "skipped" and wasxfail is not None:
            return "xfailed", first_line(text) or wasxfail or None
        if outcome == "passed" and wasxfail is not None and r.get("when") == "call":
            return "xpassed", wasxfail or None
        if outcome == "skipped":
            return "skipped", text.removeprefix("Skipped: ")
        if outcome == "failed":
            if "Timeout" in text and ("Failed: Timeout" in text or "+++ Timeout" in text):
                return "timed_out", first_line(text[text.find("Timeout"):])
            if r.get("when") == "call" and "[XPASS(strict)]" in text:
                return "failed", text.strip()
            return "failed", first_line(text)
    return "passed", None


def failure_output(reports: list[dict[str, Any]]) -> str | None:
    """The failure output of one attempt: the text of every failed or crash report's
    ``longrepr`` (crash message and traceback lines), ``None`` when there is none."""
    texts = [_text(r.get("longrepr")) for r in reports
             if r.get("outcome") == "failed" or r.get("when") == CRASH_WHEN]
    return "\n".join(t for t in texts if t) or None


class ReportLog:
    """Results of the tests a pytest-reportlog file reports finished (see the module docstring).

    ``poll()`` is called repeatedly while pytest runs and once after it exits; each finished test
    is returned once.  ``items_file``: the ``--spyre-dump-items`` file (re-read when a test's
    nodeid is not in it yet).
    """

    def __init__(self, path: Path, items_file: Path) -> None:
        self._tail = Tail(path)
        self._items_file = items_file
        self._items: dict[str, dict[str, Any]] = {}
        self._attempt: dict[str, list[dict[str, Any]]] = {}
        self._reruns: dict[str, int] = {}
        self._rerun: set[str] = set()  # nodeids whose current attempt reported ``rerun``

    def item(self, nodeid: str) -> dict[str, Any] | None:
        """The ``SpecItem`` dict of ``nodeid`` from the items file, if it is there."""
        if nodeid not in self._items:
            self._items = read_items(self._items_file)
        return self._items.get(nodeid)

    def poll(self) -> list[TestResult]:
        """Results of the tests that finished since the last call, in the order they finished."""
        out = []
        for rec in self._tail.read():
            if rec.get("$report_type") != "TestReport":
                continue
            nodeid, when = rec["nodeid"], rec.get("when")
            if when == "setup" and nodeid in self._rerun:  # a rerun attempt logged without teardown
                self._next_attempt(nodeid)
            self._attempt.setdefault(nodeid, []).append(rec)
            if rec.get("outcome") == "rerun":  # this attempt failed and the test runs again
                self._rerun.add(nodeid)
            if when in ("teardown", CRASH_WHEN):
                if nodeid in self._rerun:
                    self._next_attempt(nodeid)
                else:
                    out.append(self._finish(nodeid, self._attempt.pop(nodeid)))
        return out

    def _next_attempt(self, nodeid: str) -> None:
        self._rerun.discard(nodeid)
        self._attempt.pop(nodeid, None)
        self._reruns[nodeid] = self._reruns.get(nodeid, 0) + 1

    def _finish(self, nodeid: str, reports: list[dict[str, Any]]) -> TestResult:
        props = {k: v for r in reports for k, v in r.get("user_properties") or []}
        meta = self.item(nodeid) or props
        item_id = meta.get("id") or nodeid
        reruns = self._reruns.pop(nodeid, 0)
        outcome, message = outcome_of(reports)
        if outcome == "passed" and reruns:
            outcome = "flaky"
        return make_result(item_id, meta, outcome=outcome, attempts=1 + reruns, message=message,
                           detail=failure_output(reports) if outcome in BAD_OUTCOMES else None,
                           duration_ms=round(sum(r.get("duration") or 0.0 for r in reports) * 1000.0, 3))
