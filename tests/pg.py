"""A fresh PostgreSQL schema per test, on the real server (``RELAY_TEST_POSTGRES_URL``)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

PG_URL = os.environ.get("RELAY_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def fresh_schema_url(prefix: str) -> Iterator[str]:
    """Yield ``PG_URL`` with ``search_path`` set to a new empty schema, dropped afterwards;
    skips the test (with the reason) when PostgreSQL is not usable."""
    pytest.importorskip("psycopg", reason="psycopg is not installed")
    from sqlalchemy import create_engine, text

    schema = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_URL)
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:  # noqa: BLE001
        admin.dispose()
        pytest.skip(f"PostgreSQL at {PG_URL} not usable: {type(exc).__name__}")
    try:
        yield f"{PG_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
