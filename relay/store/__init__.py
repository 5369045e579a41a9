"""Persistence: engine/session factory, the schema, and one module of functions per table.

Every function takes an open ``Session`` first; functions documented as committing do so
themselves (the webhook handler must have the delivery committed before it answers 202).
"""

from relay.store.db import create_schema, make_engine, make_session_factory, ping
from relay.store.deliveries import (
    claim_delivery,
    get_delivery,
    insert_deliveries,
    insert_delivery,
    load_delivery,
    mark_delivery,
    pending_deliveries,
    reset_stale_processing,
)
from relay.store.hud_results import list_hud_results, store_hud_result
from relay.store.runs import list_runs, load_run, save_run
from relay.store.tables import Base

__all__ = [
    "Base",
    "make_engine",
    "make_session_factory",
    "create_schema",
    "ping",
    "insert_delivery",
    "insert_deliveries",
    "get_delivery",
    "load_delivery",
    "claim_delivery",
    "mark_delivery",
    "pending_deliveries",
    "reset_stale_processing",
    "save_run",
    "load_run",
    "list_runs",
    "store_hud_result",
    "list_hud_results",
]
