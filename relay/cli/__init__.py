"""The ``relay`` command line (design §3): serve, replay, audit, select, changes, specs
check/apply, run, send-webhook, quarantine, catch-up, worker, db upgrade.

Each command lives in the module named after it: ``relay.cli.replay`` (the main job),
``relay.cli.audit`` (selection's recall against real outcomes), ``relay.cli.select``,
``relay.cli.changes``, ``relay.cli.specs`` (specs check / apply), ``relay.cli.run`` (whole specs),
``relay.cli.serve``, ``relay.cli.send_webhook``, ``relay.cli.worker``, ``relay.cli.quarantine``,
``relay.cli.catch_up`` and ``relay.cli.db`` (db upgrade); the shared pieces are
``relay.cli.common`` (the Typer apps, ``fail``), ``relay.cli.helptext`` (git-like help) and
``relay.cli.render`` (tables, progress).  This module assembles them into one Typer ``app``
(the ``relay`` console script).

Human output (tables, progress) goes to stderr; ``--json`` output alone goes to stdout.  Bad
input ends with a one-line message naming the file (and line where known) and exit code 2;
never a traceback.
"""


from __future__ import annotations

# the import order is the registration order, which is the order of ``relay --help``
# isort: off
from relay.cli import audit as _audit  # noqa: F401 - registers relay audit
from relay.cli import replay as _replay  # noqa: F401 - registers relay replay
from relay.cli import select as _select  # noqa: F401 - registers relay select
from relay.cli import changes as _changes  # noqa: F401 - registers relay changes
from relay.cli import specs as _specs  # noqa: F401 - registers relay specs check / apply
from relay.cli import serve as _serve  # noqa: F401 - registers relay serve
from relay.cli import worker as _worker  # noqa: F401 - registers relay worker
from relay.cli import quarantine as _quarantine  # noqa: F401 - registers relay quarantine
from relay.cli import catch_up as _catch_up  # noqa: F401 - registers relay catch-up
from relay.cli import db as _db  # noqa: F401 - registers relay db upgrade
from relay.cli import run as _run  # noqa: F401 - registers relay run
from relay.cli import send_webhook as _send_webhook  # noqa: F401 - registers relay send-webhook
# isort: on
from relay.cli.common import app, fail

__all__ = ["app", "fail", "main"]


def main() -> None:  # pragma: no cover - console script entry
    app()
