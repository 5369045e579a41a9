"""``relay serve``: the relay (webhooks, callbacks, dashboard) under uvicorn (design §3)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from relay.cli.common import RelayCommand, app, fail, settings_or_fail

if TYPE_CHECKING:
    from relay.settings import Settings


@app.command(cls=RelayCommand)
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to bind.")] = 8000,
) -> None:
    """Serve the relay: webhooks, callbacks and the dashboard.

    Needs RELAY_WEBHOOK_SECRET; state in RELAY_STATE_DIR (default ./.relay).

    \b
    Examples:
      RELAY_WEBHOOK_SECRET=s3cr3t-value relay serve
      relay serve --host 0.0.0.0 --port 8080
    """
    import logging

    import uvicorn
    from sqlalchemy.exc import ArgumentError

    from relay.errors import ConfigError
    from relay.service import create_app

    settings = settings_or_fail()
    # the relay's own INFO lines (delivery started/finished, quarantine, catch-up) next to
    # uvicorn's, in the same format
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s:     %(name)s: %(message)s")
    try:
        settings.require_webhook_secret()
        _check_specs(settings)
        application = create_app(settings)
    except ConfigError as exc:
        fail(str(exc))
    except ArgumentError as exc:  # SQLAlchemy cannot parse RELAY_DATABASE_URL
        fail(f"RELAY_DATABASE_URL: {exc}")
    except OSError as exc:  # the state directory cannot be made or written
        fail(f"RELAY_STATE_DIR {settings.state_dir}: {exc.strerror or exc}")
    uvicorn.run(application, host=host, port=port, log_level="info")


def _check_specs(settings: Settings) -> None:
    """Refuse to start on ``RELAY_SPECS`` that do not exist or do not parse: every webhook run
    would fail on them (``relay specs check`` errors, file:line:col, at most ten)."""
    from relay.errors import InputError
    from relay.worker.delivery import run_config
    from test_specs.authoring.check import check_specs

    if not settings.specs:
        return  # the bundled specs: checked by CI (relay specs check --strict test_specs/specs)
    try:
        paths = run_config(settings).spec_paths
    except InputError as exc:
        fail(f"RELAY_SPECS: {exc}")
    errors = check_specs(paths)
    if errors:
        fail("RELAY_SPECS do not parse:\n" + "\n".join(str(e) for e in errors[:10]))
