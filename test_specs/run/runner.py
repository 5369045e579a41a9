"""Run spec items in pytest and return one ``TestResult`` per requested id.

``run_items(item_ids, spec_paths, *, workdir, device="spyre", reruns=2, timeout_s=120, env=None,
on_result=None, shards=1, upstream=None, python=None, modes=None) -> list[TestResult]`` (in the order of
``item_ids``) runs one pytest process with ``shards`` pytest-xdist workers (``-n``; at most one
per item) under ``<workdir>``:

1. writes ``<workdir>/selected_ids.txt`` and runs ``<python> -m pytest -p test_specs.plugin
   -p no:cacheprovider <spec files> --spyre-select=... --spyre-device=... -n <workers>
   --max-worker-restart=<enough for every test to crash> --junitxml=<workdir>/junit.xml
   --report-log=<workdir>/reportlog.jsonl --spyre-dump-items=<workdir>/items.jsonl
   --timeout=<timeout_s> --spyre-hang-kill=<timeout_s + HANG_GRACE_S> --tb=native -p no:warnings
   [--reruns N --rerun-except PATTERN] -q`` with
   ``cwd=workdir`` in its own process group; pytest's output goes to ``<workdir>/pytest.log``.
   ``reruns`` (default 2, PyTorch CI's convention): pytest-rerunfailures reruns a failing test;
   failed-then-passed is ``flaky``; ``--rerun-except`` keeps it from rerunning a deterministic
   device refusal (``test_specs.values.refusals``), whose result says so (``not_rerun``).
   pytest-timeout interrupts a test after ``timeout_s``;
2. tails pytest-reportlog's ``reportlog.jsonl`` while it runs (``records.ReportLog``) and calls
   ``on_result`` once per finished test, in the calling thread;
3. a worker that dies inside a test (a device ``os.abort()``, a segfault, ``os._exit``) costs
   that test only: xdist reports it and starts a replacement worker for the rest; the test is
   ``crashed`` (message: how the worker ended and the last error line of the log;
   pytest-rerunfailures also reruns a crashed test under xdist, so ``attempts`` counts the
   crashes).  A test still running ``timeout_s + HANG_GRACE_S`` s after it started (a hang
   pytest-timeout cannot interrupt) has its worker ended by the watchdog and is ``timed_out``
   (``containment``);
4. an id pytest never collected (not produced by ``spec_paths``) is ``failed`` with message
   "not collected"; if pytest itself died before running an id, that id is ``crashed``.

Outcomes: ``results.OUTCOMES``; ``flaky`` = failed then passed on a rerun (PyTorch CI).
Durations are milliseconds.  Raises ``ValueError`` for duplicate ids; nothing for test failures.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from test_specs.reports.records import ReportLog, exit_status, make_result, read_items
from test_specs.values.planned import ModeRule, write_rules
from test_specs.values.refusals import RERUN_EXCEPT, mark_not_rerun
from test_specs.values.results import TestResult

#: Extra seconds past ``timeout_s`` before the watchdog ends a worker pytest-timeout did not stop.
HANG_GRACE_S = 30.0
_POLL_S = 0.1

#: pytest processes started by this process and still running: their process groups (pytest and
#: its xdist workers) are killed when this process exits, so a relay stopped in the middle of a
#: run (SIGTERM, then its shutdown grace) leaves no orphan test process behind; the abandoned
#: delivery is run again by restart recovery.
_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()


def kill_live_processes() -> int:
    """Kill every pytest process group this process started that is still running; how many.
    Registered with ``atexit``; a SIGKILL'd parent cannot run it (the children then finish on
    their own, bounded by ``timeout_s`` per test)."""
    with _LIVE_LOCK:
        live = [p for p in _LIVE if p.poll() is None]
    for proc in live:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(live)


atexit.register(kill_live_processes)


def default_shards() -> int:
    """How many pytest workers a run uses when none is asked for: the cores this process may run
    on (``os.sched_getaffinity``, which honours taskset and cgroup cpusets; ``os.cpu_count`` where
    it does not exist), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def thread_env(workers: int, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` plus ``OMP_NUM_THREADS`` = the cores per worker (at least 1) when ``workers`` > 1
    and neither ``env`` nor this process sets it: torch starts one intra-op thread per core in
    every worker, so N workers on N cores would run N² threads, whose idle ones spin (OpenMP)."""
    out = dict(env or {})
    if workers > 1 and "OMP_NUM_THREADS" not in out and "OMP_NUM_THREADS" not in os.environ:
        out["OMP_NUM_THREADS"] = str(max(1, default_shards() // workers))
    return out


def expected_seconds(item_ids: Iterable[str], durations: Mapping[str, float] | None) -> dict[str, float]:
    """Each id's expected duration in seconds: its stored one, else the median of the stored ones
    among ``item_ids`` (1.0 when none is stored) — an unmeasured test is assumed typical."""
    ids = list(item_ids)
    known = sorted(durations[i] for i in ids if durations and i in durations)
    typical = known[len(known) // 2] if known else 1.0
    return {i: (durations[i] if durations and i in durations else typical) for i in ids}


def longest_first(item_ids: Iterable[str], durations: Mapping[str, float] | None) -> list[str]:
    """``item_ids`` by expected duration, longest first, ties by id: the order that lets dynamic
    scheduling (xdist's ``load``) end its workers together (LPT, longest processing time first)."""
    cost = expected_seconds(item_ids, durations)
    return sorted(cost, key=lambda i: (-cost[i], i))


def shard_split(item_ids: list[str], shards: int,
                durations: Mapping[str, float] | None = None) -> list[list[str]]:
    """Deterministic split balanced by expected duration (``expected_seconds``): the ids, longest
    first (ties by id), each dealt to the shard with the least expected time so far (ties: the
    lowest shard) — greedy LPT, so the shards end within one test of each other.

    Without durations every test costs the same and this is the sorted ids dealt round-robin
    (shard ``k`` gets sorted[k::n]): the items of one op/template (adjacent in id order, similar
    cost) spread over all shards.  Independent of input order and machine.  Empty shards are
    dropped; each shard keeps the longest-first order.  Raises ``ValueError`` if ``shards < 1``.
    """
    if shards < 1:
        raise ValueError("shards must be >= 1")
    cost = expected_seconds(item_ids, durations)
    parts: list[list[str]] = [[] for _ in range(shards)]
    loads = [0.0] * shards
    for i in longest_first(item_ids, durations):
        k = min(range(shards), key=lambda j: (loads[j], j))
        parts[k].append(i)
        loads[k] += cost[i]
    return [part for part in parts if part]


def run_items(item_ids: list[str], spec_paths: Iterable[str | Path], *, workdir: Path,
              device: str = "spyre", reruns: int = 2, timeout_s: float = 120,
              env: dict[str, str] | None = None,
              on_result: Callable[[TestResult], None] | None = None,
              shards: int = 1, upstream: str | Path | None = None,
              python: str | None = None,
              modes: Mapping[str, ModeRule] | None = None,
              durations: Mapping[str, float] | None = None,
              rerun_refusals: bool = False) -> list[TestResult]:
    """See the module docstring.  ``env`` is added to (not substituted for) ``os.environ``.

    ``shards``: the number of xdist workers (at most ``len(item_ids)``; ``shard_split`` is the
    deterministic split for runs spread over machines; ``default_shards()``: every core).
    ``durations``: stored seconds per id; with them the items run longest first
    (``longest_first``, ``--spyre-ordered``), so the workers end together.  ``rerun_refusals``:
    rerun deterministic device refusals too (the behaviour before issue 29; for
    ``bench/time_to_signal.py``'s baseline).  ``upstream``: a PyTorch checkout;
    ``path:`` entries of the specs are resolved against it and their upstream tests run through
    ``test_specs.upstream.tree`` (source-tree mode).  ``python``: the interpreter that runs pytest
    (another environment's torch; it needs pytest-xdist, pytest-timeout, pytest-rerunfailures
    and pytest-reportlog; default ``sys.executable``).  ``timeout_s`` in seconds.
    Raises ``ValueError`` for duplicate ids or ``shards < 1``.
    """
    if len(set(item_ids)) != len(item_ids):
        raise ValueError("duplicate item ids")
    workers = len(shard_split(item_ids, shards))
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    specs = _needed_specs([str(Path(p).resolve()) for p in spec_paths], item_ids)
    wanted, results = set(item_ids), {}

    def record(r: TestResult) -> None:
        if r.id in wanted and r.id not in results:
            if reruns > 0 and not rerun_refusals:
                r = mark_not_rerun(r)
            results[r.id] = r
            if on_result is not None:
                on_result(r)

    rc = None
    if item_ids and specs:
        cmd = _command(specs, workdir, device=device, reruns=reruns, timeout_s=timeout_s, workers=workers,
                       n_items=len(item_ids), upstream=upstream, python=python, rerun_refusals=rerun_refusals)
        order = longest_first(item_ids, durations) if durations else item_ids
        (workdir / "selected_ids.txt").write_text("".join(i + "\n" for i in order), encoding="utf-8")
        if durations:
            cmd.append("--spyre-ordered")
        rules = {i: modes[i] for i in item_ids if modes and i in modes}
        if rules:
            cmd.append(f"--spyre-modes={write_rules(workdir / 'modes.json', rules)}")
        rc = _run(cmd, workdir, thread_env(workers, env), record)
    items = read_items(workdir / "items.jsonl")
    meta = {it["id"]: it for it in items.values()}
    for rid in item_ids:
        if rid in results:
            continue
        if rc is None:
            record(make_result(rid, {}, outcome="failed", message="not collected: no spec files given"))
        elif rc not in (0, 1, 5):
            msg = (f"pytest process died before running this test ({exit_status(rc)}): "
                   f"{_last_line(workdir / 'pytest.log')}")
            record(make_result(rid, meta.get(rid, {}), outcome="crashed", message=msg))
        else:
            record(make_result(rid, meta.get(rid, {}), outcome="failed",
                               message="not collected: no spec file produces this id"))
    return [results[i] for i in item_ids]


def _command(specs: list[str], workdir: Path, *, device: str, reruns: int, timeout_s: float, workers: int,
             n_items: int, upstream: str | Path | None, python: str | None,
             rerun_refusals: bool = False) -> list[str]:
    """The pytest command line of the module docstring (step 1)."""
    targets, extra = list(specs), []
    if upstream is not None:
        from test_specs.upstream.tree import (
            run_args,  # imports pytest and the spec loader: only for source-tree runs
        )

        targets, extra = run_args(specs, Path(upstream))
    cmd = [python or sys.executable, "-m", "pytest", "-p", "test_specs.plugin", "-p", "no:cacheprovider", *extra,
           *targets, f"--spyre-select={workdir / 'selected_ids.txt'}", f"--spyre-device={device}",
           "-n", str(workers), f"--max-worker-restart={n_items * (reruns + 1) + workers}",
           f"--junitxml={workdir / 'junit.xml'}", f"--report-log={workdir / 'reportlog.jsonl'}",
           f"--spyre-dump-items={workdir / 'items.jsonl'}", f"--timeout={timeout_s:g}",
           f"--spyre-hang-kill={timeout_s + HANG_GRACE_S:g}", "-q", "-rN", "-o", "junit_logging=no",
           # stdlib tracebacks: pytest's own style parses each frame's source file (an AST of
           # common_methods_invocations.py per frame) — 84 s of 155 s of a 452-xfail run, profiled
           "--tb=native",
           # warnings go to pytest.log as Python prints them: xdist would forward each to the
           # controller, which imports the warning's module (spyre_backend, torch: ~2.5 s of CPU)
           "-p", "no:warnings"]
    if reruns > 0:
        cmd += ["--reruns", str(reruns)] + ([] if rerun_refusals else ["--rerun-except", RERUN_EXCEPT])
    return cmd


def _run(cmd: list[str], workdir: Path, env: dict[str, str] | None,
         record: Callable[[TestResult], None]) -> int:
    """Run ``cmd`` and ``record`` each result as pytest-reportlog reports it; pytest's return code."""
    full_env = {**os.environ, **(env or {})}
    root = str(Path(__file__).resolve().parents[2])  # the project root (test_specs/run/runner.py)
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, full_env.get("PYTHONPATH")]))
    log_path = workdir / "pytest.log"
    for stale in ("reportlog.jsonl", "items.jsonl"):
        (workdir / stale).unlink(missing_ok=True)
    reports = ReportLog(workdir / "reportlog.jsonl", workdir / "items.jsonl")

    def emit() -> None:
        for r in reports.poll():
            if r.outcome == "crashed":  # add the last error line of the log (faulthandler's)
                r = r.model_copy(update={"message": f"{r.message}: {_last_line(log_path)}"})
            record(r)

    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=workdir, env=full_env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            while proc.poll() is None:
                emit()
                time.sleep(_POLL_S)
            emit()
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
    return proc.returncode


def _needed_specs(specs: list[str], item_ids: list[str]) -> list[str]:
    """Only the spec files whose stem (the item id's suite) is named by some id, so a shard does
    not load and expand databases it will not run; all of them if an id names no spec file
    (pytest then reports it "not collected")."""
    suites = {i.split("::", 1)[0] for i in item_ids}
    if not suites <= {Path(s).stem for s in specs}:
        return specs
    return [s for s in specs if Path(s).stem in suites]


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    interesting = [ln for ln in lines if "Fatal Python error" in ln or "Error" in ln or "Aborted" in ln]
    return (interesting[-1] if interesting else lines[-1] if lines else "").strip()[:300]
