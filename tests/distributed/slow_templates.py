"""Test-only template ``TestSlow::test_sleep`` (registered through
``SPYRE_SPEC_TEMPLATES=tests.distributed.slow_templates``): sleeps ``SPYRE_TEST_SLEEP_S``
seconds (default 1.0), then passes — a shard long enough to kill a worker in its middle."""

from __future__ import annotations

import os
import time

from test_specs.templates.kit import Template
from test_specs.templates.registry import register


def _sleep(op, dtype, device, tol):
    time.sleep(float(os.environ.get("SPYRE_TEST_SLEEP_S", "1.0")))


register(Template(name="TestSlow::test_sleep", upstream="tests/distributed/slow_templates.py::sleep",
                  fn=_sleep, builtin=False))
