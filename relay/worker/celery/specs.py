"""Spec files as references a worker on another machine can resolve without a shared disk.

A spec under the packaged ``test_specs/specs`` directory travels as its file name (every worker
has the same package); any other spec travels as its text.  ``materialize`` writes the texts to
a local directory and returns the paths to give ``run_items``.  File names are kept because item
ids start with the spec's stem.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from relay.errors import SpecRefError

__all__ = ["spec_refs", "materialize"]


def _packaged_dir() -> Path:
    from importlib import resources

    return Path(str(resources.files("test_specs") / "specs")).resolve()


def spec_refs(paths: Sequence[Path | str]) -> list[dict[str, Any]]:
    """``[{"packaged": name} | {"name": name, "text": text}]`` for ``paths``, in order.

    Raises ``SpecRefError`` for a path that is not a readable file."""
    packaged = _packaged_dir()
    refs: list[dict[str, Any]] = []
    for p in paths:
        path = Path(p).resolve()
        if not path.is_file():
            raise SpecRefError(f"{p}: no such spec file")
        if path.parent == packaged:
            refs.append({"packaged": path.name})
        else:
            refs.append({"name": path.name, "text": path.read_text(encoding="utf-8")})
    return refs


def materialize(refs: Sequence[dict[str, Any]], directory: Path) -> list[Path]:
    """Local paths for ``refs``: packaged names resolved in this install, texts written under
    ``directory/<index>/<name>``.  Raises ``SpecRefError`` for an unresolvable reference."""
    packaged = _packaged_dir()
    out: list[Path] = []
    for k, ref in enumerate(refs):
        if "packaged" in ref:
            path = packaged / str(ref["packaged"])
            if not path.is_file():
                raise SpecRefError(f"packaged spec {ref['packaged']!r} not in this install")
        elif "name" in ref and "text" in ref:
            name = Path(str(ref["name"])).name
            if not name or name in (".", ".."):
                raise SpecRefError(f"bad spec file name {ref['name']!r}")
            path = directory / str(k) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(str(ref["text"]), encoding="utf-8")
        else:
            raise SpecRefError(f"bad spec reference with keys {sorted(ref)}")
        out.append(path)
    return out
