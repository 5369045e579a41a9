"""``relay catch-up``: ask GitHub to redeliver the webhook deliveries this relay missed."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from relay.cli.common import RelayCommand, app, err, fail, settings_or_fail


@app.command("catch-up", cls=RelayCommand)
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
    """Redeliver the webhook deliveries this relay missed.

    Lists the hook's deliveries, skips those stored in RELAY_DATABASE_URL and redelivers each
    failed one once.  Needs a token with admin rights on the repository.

    Exit status: 0, 1 when GitHub refused (unknown hook, listing or a redelivery failed),
    2 for bad input or configuration.

    \b
    Examples:
      relay catch-up --repo pytorch/pytorch --hook-id 424242 --since 2026-12-01T00:00:00Z
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
