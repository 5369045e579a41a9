"""``relay worker``: a Celery worker running deliveries and test shards (design §3)."""

from __future__ import annotations

from typing import Annotated

import typer

from relay.cli.common import RelayCommand, app, fail, settings_or_fail


@app.command(cls=RelayCommand)
def worker(
    concurrency: Annotated[int | None, typer.Option(
        "--concurrency", "-c", min=1, help="Pool processes (default: CPU count, at least 2).")] = None,
    loglevel: Annotated[str, typer.Option("--loglevel", "-l", help="Celery log level.")] = "INFO",
    hostname: Annotated[str | None, typer.Option(
        "--hostname", "-n", help="Worker node name (default: celery@<host>).")] = None,
    pool: Annotated[str, typer.Option(help="Celery pool: prefork, threads or solo.")] = "prefork",
) -> None:
    """Run a Celery worker for deliveries and test shards.

    Needs RELAY_BROKER_URL and, across machines, a shared RELAY_DATABASE_URL such as
    PostgreSQL.

    \b
    Examples:
      RELAY_BROKER_URL=redis://127.0.0.1:6379/0 relay worker --concurrency 2
    """
    from relay.errors import ConfigError

    try:
        from relay.worker.celery.worker import start_worker
    except ImportError as exc:
        fail(f"relay worker needs Celery: pip install 'spyre-relay[distributed]' ({exc})")
    settings = settings_or_fail()
    try:
        settings.require_broker()
    except ConfigError as exc:
        fail(str(exc))
    if pool not in ("prefork", "threads", "solo"):
        fail(f"--pool must be prefork, threads or solo, not {pool!r}")
    start_worker(settings, concurrency=concurrency, loglevel=loglevel, hostname=hostname, pool=pool)
