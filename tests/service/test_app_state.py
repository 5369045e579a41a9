"""Issue 26: the app's state is one typed object built in one step (``build_state``) and attached
once as ``app.state``; nothing is filled in later and nothing is found by reflection."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from relay.crcr.allowlist import AllowlistSource, FixedAllowlist
from relay.service import create_app
from relay.service.intake import WebhookIntake
from relay.service.state import RelayState
from relay.settings import Settings
from tests.service.conftest import SECRET

WEBHOOK_PARTS = {"webhook_secret", "queue", "writer", "deliverer", "recovery"}


def _settings(tmp_path: Path, **extra) -> Settings:
    return Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / 'relay.db'}",
                    state_dir=tmp_path, **extra)


def test_a_webhook_app_has_every_part_from_the_start(tmp_path: Path) -> None:
    (tmp_path / "allowlist.yaml").write_text("L2: [acme/l2-ci, spyre-sim]\n")
    app = create_app(_settings(tmp_path, allowlist=str(tmp_path / "allowlist.yaml")), recover=False)
    state = app.state
    assert type(state) is RelayState and isinstance(app.intake, WebhookIntake)
    assert app.intake.state is state
    unset = [f.name for f in fields(RelayState) if getattr(state, f.name) is None]
    assert unset == ["oidc", "catchup"]  # no OIDC issuer and no catch-up hook configured
    # one allowlist source, handed to every part that reads it
    assert isinstance(state.allowlist, AllowlistSource) and state.work.allowlist is state.allowlist
    assert state.allowlist.get().get("acme/l2-ci").level == "L2"
    with pytest.raises(AttributeError):
        state.sesion_factory = None  # a misspelt part is an error, not a new field
    state.engine.dispose()


def test_a_dashboard_only_app_has_no_webhook_parts_and_no_intake(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'r.db'}", state_dir=tmp_path),
                     webhooks_enabled=False)
    assert app.intake is None
    assert all(getattr(app.state, name) is None for name in WEBHOOK_PARTS)
    assert isinstance(app.state.allowlist, FixedAllowlist)  # RELAY_ALLOWLIST unset
    assert app.state.allowlist.refresh() is app.state.allowlist.get()
    app.state.engine.dispose()


def test_the_catch_up_is_built_with_the_app_and_left_to_its_startup(tmp_path: Path) -> None:
    app = create_app(_settings(tmp_path, catchup_hook_id=5), recover=False)
    assert app.state.catchup is not None and not app.state.catchup.is_alive()
    app.state.engine.dispose()
