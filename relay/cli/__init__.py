"""The ``relay`` command line (design §3): serve, replay, audit, select, changes, specs
check/apply, run, quarantine, catch-up, worker, db upgrade.

The commands live in ``relay.cli.replay`` (the main job), ``relay.cli.audit`` (selection's
recall against real outcomes), ``relay.cli.run`` (select, changes, specs check),
``relay.cli.spec_run`` (run: whole specs) and ``relay.cli.service`` (serve, worker,
quarantine, catch-up, db); this module
assembles them into one Typer ``app`` (the ``relay`` console script).

Human output (tables, progress) goes to stderr; ``--json`` output alone goes to stdout.  Bad
input ends with a one-line message naming the file (and line where known) and exit code 2;
never a traceback.
"""


from __future__ import annotations

from relay.cli import audit as _audit  # noqa: F401 - registers relay audit
from relay.cli import replay as _replay  # noqa: F401 - registers relay replay
from relay.cli import run as _run  # noqa: F401 - registers the pipeline commands
from relay.cli import service as _service  # noqa: F401 - registers the service commands
from relay.cli import spec_run as _spec_run  # noqa: F401 - registers relay run
from relay.cli.common import app, fail

__all__ = ["app", "fail", "main"]


def main() -> None:  # pragma: no cover - console script entry
    app()
