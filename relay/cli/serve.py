"""``relay serve``: the relay (webhooks, callbacks, dashboard) under uvicorn (design §3)."""

from __future__ import annotations

from typing import Annotated

import typer

from relay.cli.common import RelayCommand, app, fail, settings_or_fail


@app.command(cls=RelayCommand)
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 8000,
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

    from relay.errors import ConfigError
    from relay.service import create_app

    settings = settings_or_fail()
    # the relay's own INFO lines (delivery started/finished, quarantine, catch-up) next to
    # uvicorn's, in the same format
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s:     %(name)s: %(message)s")
    try:
        settings.require_webhook_secret()
        application = create_app(settings)
    except ConfigError as exc:
        fail(str(exc))
    uvicorn.run(application, host=host, port=port, log_level="info")
