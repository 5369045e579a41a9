"""Run spec items in a pytest subprocess and return one ``TestResult`` per requested id.

``run_items(item_ids, spec_paths, *, workdir, device="spyre", reruns=2, timeout_s=120, env=None,
on_result=None, shards=1, upstream=None) -> list[TestResult]`` (in the order of ``item_ids``);
with ``shards=N`` the ids are split by ``shard_split`` and each shard below runs in its own
pytest process under ``<workdir>/shard-<k>/``, concurrently.  Per shard:

1. writes ``<workdir>/selected_ids.txt`` and runs ``sys.executable -m pytest -p test_specs.plugin
   -p no:cacheprovider <spec files> --spyre-select=... --spyre-device=... --junitxml=<workdir>/
   junit.xml --spyre-results=<workdir>/results.jsonl --timeout=<timeout_s> [--reruns N] -q``
   (``reruns`` defaults to 2, PyTorch CI's convention; pytest-rerunfailures reruns a failing
   test in the same process; failed-then-passed is ``flaky``; pytest-timeout's per-test limit)
   with ``cwd=workdir``; pytest's output goes to ``<workdir>/pytest.log``;
2. tails ``results.jsonl`` while it runs and calls ``on_result`` once per finished test;
3. if the process dies inside a test (a device ``os.abort()``, a segfault), that test is
   ``crashed`` (message: exit status and the last log line) and pytest is started again for the
   ids not yet run (``junit.restart<k>.xml``), so one crash costs one test, not the shard; a test
   still running ``timeout_s + 30`` s after it started (a hang pytest-timeout cannot interrupt)
   is killed and reported ``timed_out``.  If the process dies before running anything, every
   remaining id is ``crashed``;
4. fills gaps from the JUnit XML (stdlib ``xml.etree``; ``id`` comes from the testcase
   properties the plugin sets).  An id pytest never collected (not produced by ``spec_paths``)
   is ``failed`` with message "not collected".

Outcomes: ``results.OUTCOMES``; ``flaky`` = failed then passed on a rerun (PyTorch CI).
Durations are milliseconds.  Raises ``ValueError`` for duplicate ids; nothing for test failures.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable

from test_specs.results import TestResult

#: Extra seconds past ``timeout_s`` before the runner kills a test pytest-timeout did not stop.
HANG_GRACE_S = 30.0
_POLL_S = 0.1

#: pytest processes started by this process and still running: killed when it exits, so a relay
#: stopped in the middle of a run (SIGTERM, then its shutdown grace) leaves no orphan test
#: process behind; the abandoned delivery is run again by restart recovery.
_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()


def kill_live_processes() -> int:
    """Kill every pytest process this process started that is still running; how many.
    Registered with ``atexit``; a SIGKILL'd parent cannot run it (the children then finish on
    their own, bounded by ``timeout_s`` per test)."""
    with _LIVE_LOCK:
        live = [p for p in _LIVE if p.poll() is None]
    for proc in live:
        proc.kill()
    return len(live)


atexit.register(kill_live_processes)


def _meta_from_id(item_id: str) -> dict[str, Any]:
    """Best-effort metadata from an id ``suite::Class::method[subject-dtype]`` (no spec needed)."""
    head, _, rest = item_id.partition("[")
    template = head.split("::", 1)[1] if "::" in head else head
    subject, _, dtype = rest.rstrip("]").rpartition("-")
    return {"upstream": template, "op": subject or None, "dtype": dtype or None}


def _signal_name(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit code {rc}"


class _Tail:
    """Incremental reader of the JSON-lines results file (tolerates a half-written last line)."""

    def __init__(self, path: Path) -> None:
        self.path, self.pos, self.buf = path, 0, ""

    def read(self) -> list[dict[str, Any]]:
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


def parse_junit(path: Path) -> dict[str, dict[str, Any]]:
    """``{id: {outcome, duration_ms, message, upstream, op, dtype, mode}}`` from a JUnit XML file."""
    if not path.exists():
        return {}
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for tc in root.iter("testcase"):
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        item_id = props.get("id")
        if not item_id:
            continue
        outcome, message = "passed", None
        for tag, oc in (("failure", "failed"), ("error", "failed"), ("skipped", "skipped")):
            el = tc.find(tag)
            if el is not None:
                outcome, message = oc, (el.get("message") or "").strip() or None
                if tag == "skipped" and el.get("type") == "pytest.xfail":
                    outcome = "xfailed"
                break
        if message and "Timeout" in message:
            outcome = "timed_out"
        out[item_id] = {"outcome": outcome, "message": message,
                        "duration_ms": float(tc.get("time") or 0.0) * 1000.0,
                        **{k: props.get(k) for k in ("upstream", "op", "module", "dtype", "mode")}}
    return out


def _make(item_id: str, meta: dict[str, Any], **fields: Any) -> TestResult:
    m = {**_meta_from_id(item_id), **{k: v for k, v in meta.items() if v is not None}}
    return TestResult(id=item_id, upstream=m.get("upstream") or "", op=m.get("op"), module=m.get("module"),
                      dtype=m.get("dtype"), mode=m.get("mode") or "mandatory_success", **fields)


def shard_split(item_ids: list[str], shards: int) -> list[list[str]]:
    """Deterministic split: the ids sorted, dealt round-robin (shard ``k`` gets sorted[k::n]).

    Sorting makes the split independent of input order and machine; dealing spreads the items of
    one op/template (adjacent in id order, similar cost) over all shards.  Empty shards are
    dropped.  Raises ``ValueError`` if ``shards < 1``.
    """
    if shards < 1:
        raise ValueError("shards must be >= 1")
    ordered = sorted(item_ids)
    return [part for part in (ordered[k::shards] for k in range(shards)) if part]


def run_items(item_ids: list[str], spec_paths: Iterable[str | Path], *, workdir: Path,
              device: str = "spyre", reruns: int = 2, timeout_s: float = 120,
              env: dict[str, str] | None = None,
              on_result: Callable[[TestResult], None] | None = None,
              shards: int = 1, upstream: str | Path | None = None,
              python: str | None = None) -> list[TestResult]:
    """See the module docstring.  ``env`` is added to (not substituted for) ``os.environ``.

    ``shards`` > 1 runs ``shard_split(item_ids, shards)`` as that many concurrent pytest
    processes, each in ``<workdir>/shard-<k>/`` with its own crash/hang containment;
    ``on_result`` is then called from several threads (serialized by a lock).  ``upstream``:
    a PyTorch checkout; ``path:`` entries of the specs are resolved against it and their
    upstream tests run through ``test_specs.upstream`` (source-tree mode).  ``python``: the
    interpreter that runs pytest (another environment's torch; default ``sys.executable``).
    """
    if len(set(item_ids)) != len(item_ids):
        raise ValueError("duplicate item ids")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    specs = _needed_specs([str(Path(p).resolve()) for p in spec_paths], item_ids)
    parts = shard_split(item_ids, shards)
    if len(parts) <= 1:
        got = _run_shard(item_ids, specs, workdir, device, reruns, timeout_s, env, on_result, upstream,
                         python)
        return [got[i] for i in item_ids]
    lock = threading.Lock()

    def locked(r: TestResult) -> None:
        with lock:
            on_result(r)  # type: ignore[misc]

    merged: dict[str, TestResult] = {}
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        futures = [pool.submit(_run_shard, part, specs, workdir / f"shard-{k}", device, reruns, timeout_s,
                               env, locked if on_result else None, upstream, python)
                   for k, part in enumerate(parts)]
        for f in futures:
            merged.update(f.result())
    return [merged[i] for i in item_ids]


def _needed_specs(specs: list[str], item_ids: list[str]) -> list[str]:
    """Only the spec files whose stem (the item id's suite) is named by some id, so a shard does
    not load and expand databases it will not run; all of them if an id names no spec file
    (pytest then reports it "not collected")."""
    suites = {i.split("::", 1)[0] for i in item_ids}
    if not suites <= {Path(s).stem for s in specs}:
        return specs
    return [s for s in specs if Path(s).stem in suites]


def _run_shard(item_ids: list[str], specs: list[str], workdir: Path, device: str, reruns: int,
               timeout_s: float, env: dict[str, str] | None,
               on_result: Callable[[TestResult], None] | None,
               upstream: str | Path | None, python: str | None = None) -> dict[str, TestResult]:
    """One pytest process (restarted after a crash) for ``item_ids``; ``{id: TestResult}``."""
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, TestResult] = {}
    meta: dict[str, dict[str, Any]] = {}
    results_file = workdir / "results.jsonl"
    results_file.write_text("", encoding="utf-8")
    tail = _Tail(results_file)
    full_env = {**os.environ, **(env or {})}
    root = str(Path(__file__).resolve().parent.parent)
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, full_env.get("PYTHONPATH")]))
    targets, extra = list(specs), []
    if upstream is not None:
        from test_specs.upstream import run_args

        targets, extra = run_args(specs, Path(upstream))

    def record(r: TestResult) -> None:
        if r.id in results:
            return
        results[r.id] = r
        if on_result is not None:
            on_result(r)

    attempt = 0
    remaining = [i for i in item_ids]
    junits: list[Path] = []
    while remaining and targets:
        junit = workdir / ("junit.xml" if attempt == 0 else f"junit.restart{attempt}.xml")
        junits.append(junit)
        ids_file = workdir / "selected_ids.txt"
        ids_file.write_text("".join(i + "\n" for i in remaining), encoding="utf-8")
        cmd = [python or sys.executable, "-m", "pytest", "-p", "test_specs.plugin", "-p", "no:cacheprovider", *extra, *targets,
               f"--spyre-select={ids_file}", f"--spyre-device={device}", f"--junitxml={junit}",
               f"--spyre-results={results_file}", f"--timeout={timeout_s:g}", "-q", "-rN",
               "-o", "junit_logging=no"]
        if reruns > 0:
            cmd += ["--reruns", str(reruns)]
        log_path = workdir / ("pytest.log" if attempt == 0 else f"pytest.restart{attempt}.log")
        with log_path.open("wb") as log:
            proc = subprocess.Popen(cmd, cwd=workdir, env=full_env, stdout=log, stderr=subprocess.STDOUT)
            with _LIVE_LOCK:
                _LIVE.add(proc)
            running: tuple[str, float] | None = None
            started_any, killed_hang = False, None
            while True:
                done = proc.poll() is not None
                for ev in tail.read():
                    kind = ev.get("event")
                    if kind == "collected":
                        meta.update({d["id"]: d for d in ev["items"]})
                    elif kind == "start":
                        running, started_any = (ev["id"], time.monotonic()), True
                    elif kind == "result":
                        running = None
                        record(_make(ev["id"], meta.get(ev["id"], {}), outcome=ev["outcome"],
                                     duration_ms=float(ev.get("duration_ms") or 0.0),
                                     attempts=int(ev.get("attempts") or 1), message=ev.get("message")))
                if done:
                    break
                if running and time.monotonic() - running[1] > timeout_s + HANG_GRACE_S:
                    killed_hang = running[0]
                    proc.kill()
                time.sleep(_POLL_S)
        with _LIVE_LOCK:
            _LIVE.discard(proc)
        rc = proc.returncode
        for item_id, j in parse_junit(junit).items():
            if item_id in remaining and item_id not in results and item_id != (running or ("",))[0]:
                record(_make(item_id, {**j, **meta.get(item_id, {})}, outcome=j["outcome"],
                             duration_ms=j["duration_ms"], message=j["message"]))
        if running is not None:
            rid = running[0]
            elapsed_ms = (time.monotonic() - running[1]) * 1000.0
            last = _last_line(log_path)
            if killed_hang == rid:
                record(_make(rid, meta.get(rid, {}), outcome="timed_out", duration_ms=elapsed_ms,
                             message=f"no result {timeout_s + HANG_GRACE_S:g} s after start; process killed"))
            else:
                record(_make(rid, meta.get(rid, {}), outcome="crashed", duration_ms=elapsed_ms,
                             message=f"pytest process died during this test ({_signal_name(rc)}): {last}"))
        remaining = [i for i in remaining if i not in results]
        attempt += 1
        if not remaining:
            break
        if running is None or not started_any:
            # Clean exit (or death before any test): whatever is left was never collected/run.
            crashed = rc not in (0, 1, 5)
            for rid in remaining:
                if crashed:
                    msg = f"pytest process died before running this test ({_signal_name(rc)}): {_last_line(log_path)}"
                    record(_make(rid, meta.get(rid, {}), outcome="crashed", message=msg))
                else:
                    record(_make(rid, meta.get(rid, {}), outcome="failed",
                                 message="not collected: no spec file produces this id"))
            remaining = []
    for rid in item_ids:  # no spec paths at all
        if rid not in results:
            record(_make(rid, {}, outcome="failed", message="not collected: no spec files given"))
    return results


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    interesting = [ln for ln in lines if "Fatal Python error" in ln or "Error" in ln or "Aborted" in ln]
    return (interesting[-1] if interesting else lines[-1] if lines else "").strip()[:300]
