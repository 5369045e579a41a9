"""The public surface of ``relay`` is pinned (httpx's ``test_exported_members`` habit): adding or
removing a name is a decision, made here."""

from __future__ import annotations

import subprocess
import sys

import relay


def test_all_is_pinned() -> None:
    assert relay.__all__ == ["__version__", "Delivery", "RelayError", "Run", "RunConfig",
                             "RunRequest", "Settings", "Verdict", "create_app", "get_settings",
                             "run_change", "sign"]


def test_every_exported_name_resolves() -> None:
    for name in relay.__all__:
        assert getattr(relay, name) is not None, name
    assert relay.sign(b"{}", "s3cret").startswith("sha256=")


def test_importing_relay_is_cheap() -> None:
    """``import relay`` loads neither torch nor the web stack (names load on first use)."""
    code = "import sys, relay; print(sorted(m for m in ('torch', 'fastapi', 'sqlalchemy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
