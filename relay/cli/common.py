"""Shared pieces of the ``relay`` command line: the Typer apps, the stderr console and the
one way bad input ends (``fail``: a one-line message, exit code 2, never a traceback)."""

from __future__ import annotations

import os
import re
import sys
import warnings
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from relay.cli.helptext import RelayCommand

__all__ = ["app", "specs_app", "RelayCommand", "db_app", "err", "fail", "settings_or_fail", "spec_files_or_fail",
           "read_change_or_fail"]

# plain click help with git's conventions (``relay.cli.helptext``), not typer's rich panels
app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Cross-repository CI relay and regression service for PyTorch backends.\n\n"
                       "Run `relay COMMAND --help` for a command's usage and examples.")
specs_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                        help="Check specs; apply a run's proposed spec edit.")
app.add_typer(specs_app, name="specs")
db_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                     help="Database schema migrations.")
app.add_typer(db_app, name="db")
# Piped or redirected stderr (CI logs) gets 160 columns instead of rich's 80, so test ids and
# tables are not broken over lines; timestamps stay on ``log`` lines, source paths do not.
def _piped_width() -> int:
    """``COLUMNS`` when it is a sane number, else 160 (rich's own default would be 80)."""
    try:
        width = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return 160
    return width if 40 <= width <= 1000 else 160


err = Console(stderr=True, log_path=False, width=None if sys.stderr.isatty() else _piped_width())
# Import-time deprecation notices and sample-level numeric warnings of torch's test machinery are
# noise in a CLI's output; warnings of our own code still show.
warnings.filterwarnings("ignore", module=r"torch(\.|$)")


def fail(message: str, code: int = 2) -> None:
    """Print ``message`` to stderr and exit with ``code`` (2 = bad input).  The message is
    printed as text: brackets in test ids or paths are never read as rich markup, and on one
    line however long (a path with its ``file:line`` stays copyable)."""
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def settings_or_fail():
    from pydantic import ValidationError

    from relay.settings import get_settings

    try:
        return get_settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        fail(f"configuration: RELAY_{str(first['loc'][0]).upper()}: {first['msg']}")


def spec_files_or_fail(spec: list[Path] | None) -> list[Path] | None:
    """``--spec`` values with directories expanded to their spec files (``None`` stays None);
    a missing path ends the command with its message."""
    from relay.changes.inputs import spec_files
    from relay.errors import InputError

    try:
        return spec_files(spec) if spec else None
    except InputError as exc:
        fail(str(exc))
    return None


#: ``A..B`` of two shas: without a checkout, read from GitHub's compare API
SHA_RANGE = re.compile(r"[0-9a-fA-F]{7,40}\.\.[0-9a-fA-F]{7,40}")


def _github_range(ref: str):
    """The ChangeSet of the sha range ``ref`` of ``RELAY_UPSTREAM_REPO`` from GitHub's compare
    API with patches (``relay.github.compare``); a GitHub failure ends the command."""
    from relay.errors import GitHubAPIError
    from relay.github.client import GitHubClient
    from relay.github.compare import changeset_from_compare

    settings = settings_or_fail()
    base, _, head = ref.partition("..")
    # said before the first request: a lookup may wait on GitHub's retries for seconds
    err.print(f"reading {base}..{head} of {settings.upstream_repo} from GitHub's compare API "
              f"({settings.github_api_url}) …", highlight=False, markup=False, soft_wrap=True)
    try:
        with GitHubClient.from_settings(settings) as github:
            return changeset_from_compare(github, settings.upstream_repo, base, head)
    except GitHubAPIError as exc:
        fail(f"{ref}: not a file, and GitHub's compare API could not read it ({exc}); "
             "add --upstream PATH to read it from a PyTorch checkout")


def read_change_or_fail(ref: str):
    """The change in the file ``ref`` — a ChangeSet, PR-files JSON or unified diff, told apart
    by content (``relay.changes.inputs.read_change``), or a sha range ``A..B`` read from GitHub
    (no checkout needed); a missing or unreadable file ends the command with its message and a
    hint (``--upstream`` for a commit, ``relay changes``)."""
    from relay.changes.inputs import read_change, revision_hint
    from relay.errors import InputError

    if ref != "-" and not Path(ref).exists():
        if SHA_RANGE.fullmatch(ref.strip()):
            return _github_range(ref.strip())
        fail(revision_hint(ref))
    try:
        return read_change(ref)
    except InputError as exc:
        fail(str(exc))
