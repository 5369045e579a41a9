"""The universe of a run: the spec files and the items they expand to."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from relay.errors import SpecsInvalid
from test_specs.expand import expand, spec_paths_default
from test_specs.items import SpecItem
from test_specs.loader import SpecLoadError

__all__ = ["default_specs", "load_items"]


def default_specs() -> list[Path]:
    """The spec files bundled in ``test_specs/specs``."""
    return list(spec_paths_default())


def load_items(spec_paths: Sequence[Path], upstream: Path | None = None) -> list[SpecItem]:
    """Every item the specs expand to (the selection universe), sorted by id; with
    ``upstream`` (a PyTorch checkout) the specs' ``path:`` entries are collected from it too.

    Raises ``SpecsInvalid`` for a missing, malformed or semantically wrong spec.
    """
    missing = [str(p) for p in spec_paths if not Path(p).is_file()]
    if missing:
        raise SpecsInvalid("; ".join(f"{m}: no such spec file" for m in missing))
    try:
        return list(expand(list(spec_paths), upstream=upstream))
    except (SpecLoadError, ValueError) as exc:
        raise SpecsInvalid(str(exc)) from None
