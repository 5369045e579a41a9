"""``relay db upgrade``: the Alembic migrations on ``RELAY_DATABASE_URL``."""

from __future__ import annotations

from typing import Annotated

import typer

from relay.cli.common import db_app, err, settings_or_fail


@db_app.command("upgrade")
def db_upgrade(revision: Annotated[str, typer.Argument(help="Target revision.")] = "head") -> None:
    """Apply the Alembic migrations to RELAY_DATABASE_URL (the relay also does so at start)."""
    from alembic import command

    from relay.store.db import alembic_config

    command.upgrade(alembic_config(settings_or_fail().database_url), revision)
    err.print(f"database at {revision}")
