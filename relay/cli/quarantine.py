"""``relay quarantine``: flaky-test quarantine (PyTorch HUD style) evaluated now."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from relay.cli.common import RelayCommand, app, err, fail, settings_or_fail


@app.command(cls=RelayCommand)
def quarantine(
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout.")] = False,
) -> None:
    """Disable flaky tests and re-enable long-green ones now.

    Evaluates the flaky-test quarantine (PyTorch HUD style) on RELAY_DATABASE_URL: proposes
    disabling tests flaky in too many main-branch runs (DISABLED issues in
    RELAY_QUARANTINE_REPO) and re-enabling long-green ones; prints the proposals.

    Exit status: 0, or 1 when a GitHub call failed (retried by the next evaluation), 2 for bad
    configuration or an unusable database.

    \b
    Examples:
      relay quarantine --json
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
