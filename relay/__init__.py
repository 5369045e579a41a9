"""spyre-relay: a cross-repository CI relay and regression service for PyTorch backends.

Where things live (folder names are the map; dependencies point down this list):

    cli/          the ``relay`` command (replay, select, changes, specs, serve, worker, …)
    service/      the FastAPI app: factory (composition root), intake, routes/, pages
    execution/    the one place that chooses in-process work or Celery workers
    worker/       a delivery's processing: handlers per event, queues, celery/ tasks
    pipeline/     one change: select → execute → refine → verdicts → culprit → sink (ports)
    crcr/         CRCR: allowlist L1–L4, repository_dispatch fan-out, callbacks, check runs
    quarantine/   HUD-style flaky-test disabling (DISABLED issues) and re-enabling
    reporting/    results to the dashboard in CRCR's HUD body shape (outbox, sender)
    github/       the GitHub REST client, webhook payload models, signing, catch-up
    store/        SQLAlchemy tables, one module of functions per table, migrations/
    settings.py   one ``Settings`` from ``RELAY_*`` variables
    envs/         execution environments (torch versions, +faults) and commit → environment
    changes/      ChangeSets from wheels, trees, git ranges, diffs, PR-file lists
    domain/       Run, outcomes, verdicts, culprit, Delivery — pure values, no I/O
    errors.py     every exception, in one tree; retrying.py the one retry policy; logs.py

The names below are the public surface (``__all__`` is pinned by a test); they load lazily so
``import relay`` stays cheap (the pipeline imports torch).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Settings": "relay.settings",
    "get_settings": "relay.settings",
    "RelayError": "relay.errors",
    "Run": "relay.domain.run",
    "Verdict": "relay.domain.verdicts",
    "Delivery": "relay.domain.delivery",
    "RunRequest": "relay.pipeline.request",
    "RunConfig": "relay.pipeline.request",
    "run_change": "relay.pipeline.run",
    "create_app": "relay.service.factory",
    "sign": "relay.github.signing",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    """Load an exported name on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'relay' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
