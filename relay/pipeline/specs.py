"""The universe of a run: the spec files and the items they expand to."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from relay.errors import SpecsInvalid
from test_specs.values.items import SpecItem

__all__ = ["default_specs", "load_items"]


def default_specs() -> list[Path]:
    """The spec files bundled in ``test_specs/specs``, sorted by name (as
    ``test_specs.expand.universe.spec_paths_default``, without importing the expansion and torch)."""
    return sorted(Path(str(resources.files("test_specs") / "specs")).glob("*.yaml"))


def load_items(spec_paths: Sequence[Path], upstream: Path | None = None, *,
               cache_dir: Path | None = None) -> list[SpecItem]:
    """Every item the specs expand to (the selection universe), sorted by id; with
    ``upstream`` (a PyTorch checkout) the specs' ``path:`` entries are collected from it too.
    With ``cache_dir`` (and no ``upstream``) the items are read from the universe cache
    (``relay.pipeline.universe``) when one matches the specs, torch and our sources.

    Raises ``SpecsInvalid`` for a missing, malformed or semantically wrong spec.
    """
    missing = [str(p) for p in spec_paths if not Path(p).is_file()]
    if missing:
        raise SpecsInvalid("; ".join(f"{m}: no such spec file" for m in missing))

    def expand_all() -> list[SpecItem]:
        from test_specs.expand.universe import expand  # imports op_db and torch: seconds
        from test_specs.format.loader import SpecLoadError

        try:
            return list(expand(list(spec_paths), upstream=upstream))
        except (SpecLoadError, ValueError) as exc:
            raise SpecsInvalid(str(exc)) from None

    if cache_dir is None or upstream is not None:
        return expand_all()
    from relay.pipeline.universe import cached_universe

    return cached_universe(spec_paths, cache_dir, expand_all)
