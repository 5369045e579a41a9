"""``relay changes``: a ChangeSet from two wheels, two trees or two git revisions (design §3)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from relay.cli.common import RelayCommand, app, err, fail


@app.command(cls=RelayCommand)
def changes(
    src_from: Annotated[str, typer.Option("--from", help="Old side: a wheel (.whl), an extracted tree or REPO@REV.")],
    src_to: Annotated[str, typer.Option("--to", help="New side, in the same forms.")],
    out: Annotated[Path | None, typer.Option(help="Write the ChangeSet here instead of stdout.")] = None,
    title: Annotated[str, typer.Option(help="Title recorded in the ChangeSet.")] = "",
) -> None:
    """Build a ChangeSet from two wheels, trees or git revisions.

    The ChangeSet names the changed files and their changed top-level Python symbols.  SRC is
    a wheel (.whl), an extracted tree, or REPO@REV: a git revision of a local checkout.

    \b
    Examples:
      relay changes --from torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl \\
        --to torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl --out change.json
      relay changes --from ~/pytorch@v2.13.0 --to ~/pytorch@v2.14.1
    """
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
