"""The universe of spec items, cached: expanding the bundled specs imports ``op_db`` and
``module_db`` (torch and all of ``torch.testing._internal``: 10–50 s on a loaded machine) to
produce the same 8,201 items every time; reading them back from JSON takes tens of ms.

The cache file is ``cache_dir/universe-<key>.json`` (a JSON list of ``SpecItem``), where the key
is a SHA-256 over everything the expansion reads: each spec file's path and bytes, the installed
torch version (package metadata; torch is not imported), ``SPYRE_SPEC_TEMPLATES``, and the
source and data files of ``test_specs`` and ``spyre_backend`` (templates, skip tables, the op
support table).  A change to any of them makes a new key, so a stale universe is never read.
Expansion with an upstream checkout (``path:`` entries collected from its test files) is not
cached: the checkout's files are not part of the key.  An unreadable cache is ignored (rebuilt).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from selection.index.cachefile import write_atomic
from selection.index.op_index import torch_version
from test_specs.values.items import SpecItem

__all__ = ["universe_key", "cached_universe"]

log = logging.getLogger(__name__)

_ITEMS = TypeAdapter(list[SpecItem])
_ROOT = Path(__file__).resolve().parents[2]
#: packages whose files the expansion reads (relative to the project root)
SOURCES = ("test_specs", "spyre_backend")


def universe_key(spec_paths: Sequence[Path]) -> str:
    """The cache key of the universe of ``spec_paths`` (see the module docstring); 16 hex digits."""
    h = hashlib.sha256()
    h.update(torch_version().encode())
    h.update(os.environ.get("SPYRE_SPEC_TEMPLATES", "").encode())
    for p in spec_paths:
        h.update(str(Path(p).resolve()).encode())
        h.update(Path(p).read_bytes())
    for pkg in SOURCES:
        for f in sorted((_ROOT / pkg).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".yaml", ".yml", ".json"):
                h.update(f.relative_to(_ROOT).as_posix().encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def cached_universe(spec_paths: Sequence[Path], cache_dir: Path,
                    expand: Callable[[], list[SpecItem]]) -> list[SpecItem]:
    """The items of ``spec_paths`` from ``cache_dir``, or ``expand()`` once and cached."""
    path = Path(cache_dir) / f"universe-{universe_key(spec_paths)}.json"
    if path.exists():
        try:
            return _ITEMS.validate_json(path.read_bytes())
        except (OSError, ValidationError) as exc:
            log.warning("ignoring unreadable universe cache %s: %s", path, exc)
    items = expand()
    write_atomic(path, _ITEMS.dump_json(items))
    return items
