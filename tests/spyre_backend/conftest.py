"""Fixtures for the simulated Spyre device tests.

``spyre_backend`` is imported here, before any test module can import
``torch.testing._internal.common_device_type`` (which freezes device test bases at import).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import spyre_backend  # noqa: F401  (registers the device first)


@pytest.fixture
def run_python():
    """``run_python(code, env={...}, timeout=s)`` runs ``code`` in a fresh interpreter (so the
    import-time environment of ``spyre_backend`` applies) and returns the CompletedProcess."""

    def run(code: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("SPYRE_SIM_")}
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run
