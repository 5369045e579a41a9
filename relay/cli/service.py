"""``relay serve``, ``relay worker``, ``relay quarantine``, ``relay catch-up`` and
``relay db upgrade``: the service commands (design §3)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from relay.cli.common import app, db_app, err, fail, settings_or_fail


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 8000,
) -> None:
    """Serve the relay (webhooks, callbacks, dashboard) under uvicorn."""
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


@app.command()
def worker(
    concurrency: Annotated[int | None, typer.Option(
        "--concurrency", "-c", min=1, help="Pool processes (default: CPU count, at least 2).")] = None,
    loglevel: Annotated[str, typer.Option("--loglevel", "-l", help="Celery log level.")] = "INFO",
    hostname: Annotated[str | None, typer.Option(
        "--hostname", "-n", help="Worker node name (default: celery@<host>).")] = None,
    pool: Annotated[str, typer.Option(help="Celery pool: prefork, threads or solo.")] = "prefork",
) -> None:
    """A Celery worker running deliveries and test shards (needs RELAY_BROKER_URL and, across
    machines, a shared RELAY_DATABASE_URL such as PostgreSQL)."""
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


@app.command()
def quarantine(
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout.")] = False,
) -> None:
    """Evaluate flaky-test quarantine (PyTorch HUD style) on RELAY_DATABASE_URL now: propose
    disabling tests flaky in too many main-branch runs (DISABLED issues in
    RELAY_QUARANTINE_REPO) and re-enabling long-green ones; prints the proposals.

    Exit status: 0, or 1 when a GitHub call failed (retried by the next evaluation), 2 for bad
    configuration or an unusable database.
    """
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text
    from sqlalchemy.exc import SQLAlchemyError

    from relay.quarantine.policy import evaluate
    from relay.store import create_schema, make_engine, make_session_factory

    settings = settings_or_fail()
    try:
        engine = make_engine(settings.database_url)
        try:
            create_schema(engine)
            with make_session_factory(engine)() as session:
                report = evaluate(session, settings)
        finally:
            engine.dispose()
    except SQLAlchemyError as exc:
        fail(f"database {settings.database_url}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    table = Table(title=f"quarantine at {report.evaluated_at:%Y-%m-%d %H:%M} UTC "
                        f"({report.quarantined} quarantined)")
    for column in ("proposal", "test", "why", "issue"):
        table.add_column(column, overflow="fold")
    for p in report.disabled + report.reenabled:  # Text: test ids hold brackets ([op-dtype])
        table.add_row(p.action, Text(p.test_id), Text(p.reason),
                      Text((p.issue_url or "-") + (" (adopted)" if p.issue_adopted else "")))
    for test_id in report.released:
        table.add_row("released", Text(test_id), "its DISABLED issue was closed", "-")
    err.print(table if table.rows else "no new proposals")
    for line in report.errors:
        err.print(f"[yellow]github:[/yellow] {escape(line)}", highlight=False)
    if json_out:
        sys.stdout.write(report.model_dump_json(indent=1) + "\n")
    if report.errors:
        raise typer.Exit(1)


@app.command("catch-up")
def catch_up_cmd(
    repo: Annotated[str | None, typer.Option("--repo", help=(
        "owner/name of the repository whose webhook delivers to this relay "
        "(default: RELAY_UPSTREAM_REPO)."))] = None,
    hook_id: Annotated[int | None, typer.Option(
        "--hook-id", min=1, help="The repository webhook's id (default: RELAY_CATCHUP_HOOK_ID).")] = None,
    since: Annotated[str | None, typer.Option("--since", help=(
        "ISO 8601 time to look back to (default: the newest stored delivery of the hook less "
        "10 min); at most 3 days back, GitHub's limit."))] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout.")] = False,
) -> None:
    """Ask GitHub to redeliver the webhook deliveries this relay missed (down, or answered an
    error): lists the hook's deliveries, skips those stored in RELAY_DATABASE_URL, redelivers
    each failed one once.  Needs a token with admin rights on the repository.

    Exit status: 0, 1 when GitHub refused (unknown hook, listing or a redelivery failed),
    2 for bad input or configuration.
    """
    from rich.table import Table
    from rich.text import Text
    from sqlalchemy.exc import SQLAlchemyError

    from relay.errors import ConfigError, GitHubAPIError
    from relay.github.catchup import catch_up_from_settings, parse_since
    from relay.store import create_schema, make_engine, make_session_factory

    settings = settings_or_fail()
    try:
        start = parse_since(since) if since is not None else None
        engine = make_engine(settings.database_url)
        try:
            create_schema(engine)
            report = catch_up_from_settings(make_session_factory(engine), settings, repo=repo,
                                            hook_id=hook_id, since=start)
        finally:
            engine.dispose()
    except (ValueError, ConfigError) as exc:
        fail(str(exc))
    except GitHubAPIError as exc:
        fail(str(exc), 1)
    except SQLAlchemyError as exc:
        fail(f"database {settings.database_url}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    table = Table(title=f"catch-up of webhook {report.hook_id} on {report.repo} since "
                        f"{report.since:%Y-%m-%d %H:%M} UTC ({report.listed} attempts listed)")
    for column in ("outcome", "deliveries (X-GitHub-Delivery)"):
        table.add_column(column)
    for outcome, guids in (("redelivered", report.redelivered), ("already stored", report.stored),
                           ("delivered elsewhere", report.delivered)):
        if guids:
            table.add_row(outcome, f"{len(guids)}: " + ", ".join(guids[:5])
                          + (" …" if len(guids) > 5 else ""))
    for failure in report.failed:
        table.add_row("[red]refused[/red]", Text(f"{failure.guid}: {failure.error}"))
    err.print(table if table.rows else "nothing missed")
    if json_out:
        sys.stdout.write(report.model_dump_json(indent=1) + "\n")
    if report.failed:
        raise typer.Exit(1)


@db_app.command("upgrade")
def db_upgrade(revision: Annotated[str, typer.Argument(help="Target revision.")] = "head") -> None:
    """Apply the Alembic migrations to RELAY_DATABASE_URL (the relay also does so at start)."""
    from alembic import command

    from relay.store.db import alembic_config

    command.upgrade(alembic_config(settings_or_fail().database_url), revision)
    err.print(f"database at {revision}")
