"""``relay changes``: a ChangeSet from two wheels, two trees or two git revisions (design §3)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from relay.cli.common import app, err, fail


@app.command()
def changes(
    src_from: Annotated[str, typer.Option("--from", help="Old wheel (.whl) or extracted tree.")],
    src_to: Annotated[str, typer.Option("--to", help="New wheel (.whl) or extracted tree.")],
    out: Annotated[Path | None, typer.Option(help="Write the ChangeSet here instead of stdout.")] = None,
    title: Annotated[str, typer.Option(help="Title recorded in the ChangeSet.")] = "",
) -> None:
    """Build a ChangeSet (files and changed top-level symbols) from two wheels or trees."""
    from relay.changes import ChangeSourceError, build_changeset

    try:
        cs = build_changeset(src_from, src_to, title=title)
    except ChangeSourceError as exc:
        fail(str(exc))
    text = cs.model_dump_json(indent=1, exclude_none=True) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        err.print(f"wrote {out}: {len(cs.files)} files")
