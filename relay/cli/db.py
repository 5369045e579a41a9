"""``relay db upgrade``: the Alembic migrations on ``RELAY_DATABASE_URL``."""

from __future__ import annotations

from typing import Annotated

import typer

from relay.cli.common import RelayCommand, db_app, err, settings_or_fail


@db_app.command("upgrade", cls=RelayCommand)
def db_upgrade(revision: Annotated[str, typer.Argument(help="Target revision.")] = "head") -> None:
    """Apply the database migrations.

    Runs Alembic on RELAY_DATABASE_URL up to REVISION (default: the newest); the relay also
    does so at start.

    \b
    Examples:
      relay db upgrade
    """
    from alembic import command

    from relay.store.db import alembic_config

    command.upgrade(alembic_config(settings_or_fail().database_url), revision)
    err.print(f"database at {revision}")
