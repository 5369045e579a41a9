"""``relay send-webhook``: one signed GitHub delivery to a running relay, to see a webhook reach
the grid without writing a signed request by hand (``relay.github.hookshot``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from relay.cli.common import RelayCommand, app, err, fail, settings_or_fail


@app.command("send-webhook", cls=RelayCommand)
def send_webhook(
    event: Annotated[str, typer.Argument(
        metavar="EVENT", help="GitHub event name, e.g. push or pull_request.", show_default=False)],
    payload: Annotated[Path | None, typer.Option(
        metavar="FILE", help="JSON payload to send (default: examples/webhooks/EVENT.json).")] = None,
    url: Annotated[str | None, typer.Option(
        metavar="URL", help="Webhook URL (default: RELAY_PUBLIC_URL + /webhooks/github).")] = None,
) -> None:
    """Send one signed GitHub webhook delivery to a relay.

    The body is signed with RELAY_WEBHOOK_SECRET through the relay's own signer, with a fresh
    delivery id, and the relay's answer is printed (202 accepted, 200 ignored, 4xx with its
    reason).

    \b
    Examples:
      relay send-webhook push
      relay send-webhook pull_request --url http://127.0.0.1:8000/webhooks/github
      relay send-webhook push --payload my-push.json
    """
    import httpx

    from relay.errors import ConfigError, InputError
    from relay.github.hookshot import example_payload, load_payload, send_delivery

    settings = settings_or_fail()
    try:
        secret = settings.require_webhook_secret()
        body = load_payload(payload if payload is not None else example_payload(event))
    except (ConfigError, InputError) as exc:
        fail(str(exc))
    target = url or f"{settings.public_url.rstrip('/')}/webhooks/github"
    try:
        sent = send_delivery(target, event, body, secret)
    except httpx.InvalidURL as exc:
        fail(f"{target}: not a URL a relay can be reached at ({exc})")
    except httpx.HTTPError as exc:
        fail(f"{target}: no relay answered ({type(exc).__name__}: {exc}); start one with "
             "`relay serve` or give its webhook URL with --url")
    reason = sent.answer.get("status") or sent.answer.get("detail") or sent.answer
    err.print(f"{event} delivery {sent.delivery_id} → HTTP {sent.status}: {reason}",
              highlight=False, soft_wrap=True, markup=False)
    if sent.status >= 300:
        raise typer.Exit(1)
