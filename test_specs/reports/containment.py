"""Crash and hang containment for spec runs under pytest-xdist (``--spyre-hang-kill=SECONDS``).

The runner runs pytest with xdist workers (``-n N``): when a worker process dies inside a test
(a device ``os.abort()``, a segfault, ``os._exit``), xdist reports that test failed with
``when == "???"`` and starts a replacement worker that runs the rest, so one crash costs one
test.  pytest-timeout (signal method) interrupts a test that runs past ``--timeout``; a hang it
cannot interrupt (C code that never returns to the interpreter) is ended by ``Watchdog``.  This
module adds what xdist and pytest-timeout leave out, and nothing else:

- ``Watchdog`` (each worker): arms ``faulthandler.dump_traceback_later(limit, exit=True)``
  around each test call — a C thread that needs no GIL, dumps the stacks and exits the worker
  after ``limit`` seconds (the runner passes ``--timeout`` + ``HANG_GRACE_S``);
- ``CrashNotes`` (the xdist controller): rewrites xdist's crash report so it says how the worker
  ended — ``pytest process died during this test (killed by SIGABRT)`` — or, when the test ran
  for at least ``limit`` seconds, ``Timeout: no result <limit> s after start; worker killed``
  (reported ``timed_out``); sets its ``duration`` to the seconds since the test started.
"""

from __future__ import annotations

import faulthandler
import os
import subprocess
import time
from typing import Any

import pytest

from test_specs.reports.records import exit_status


def _worker_returncode(node: Any) -> int | None:
    """The exit status of a dead xdist worker process, or ``None`` when it cannot be had.

    execnet keeps the worker's ``subprocess.Popen`` on its popen gateway's IO object; that
    attribute is not public API, so any difference in shape gives ``None`` ("unknown").
    """
    popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    if not isinstance(popen, subprocess.Popen):
        return None
    try:
        return popen.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return None


class Watchdog:
    """Worker side: exit the worker when one test call runs ``limit`` seconds (see module)."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        # fd 2 is captured while a test runs; the stack dump goes to the real stderr
        self._stderr = os.fdopen(os.dup(2), "w")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        faulthandler.dump_traceback_later(self.limit, exit=True, file=self._stderr)
        try:
            yield
        finally:
            faulthandler.cancel_dump_traceback_later()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self._stderr.close()


class CrashNotes:
    """xdist controller side: say how a worker that died inside a test ended (see module)."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self._started: dict[str, float] = {}

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self._started[nodeid] = time.monotonic()

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        elapsed = time.monotonic() - self._started.get(crashitem, time.monotonic())
        status = exit_status(_worker_returncode(getattr(report, "node", None)))
        if self.limit and elapsed >= self.limit:
            report.longrepr = f"Timeout: no result {self.limit:g} s after start; worker killed ({status})"
        else:
            report.longrepr = f"pytest process died during this test ({status})"
        report.duration = elapsed


def is_controller(config: pytest.Config) -> bool:
    """Whether this pytest process is an xdist controller (it runs no tests, its workers do)."""
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def install(config: pytest.Config, limit: float) -> None:
    """Register ``Watchdog`` in a worker (or a run without xdist, where it ends the whole run) and
    ``CrashNotes`` in an xdist controller; ``limit`` in seconds, 0 = no watchdog."""
    if is_controller(config):
        config.pluginmanager.register(CrashNotes(limit), "spyre-crash-notes")
    elif limit > 0:
        config.pluginmanager.register(Watchdog(limit), "spyre-watchdog")
