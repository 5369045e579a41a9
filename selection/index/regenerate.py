"""Regenerate (or ``--check``) the shipped test → aten-op index (``selection.index.shipped``).

``python -m selection.index.regenerate [--check] [--spec FILE ...] [--cache DIR] [--device spyre]``

Items are the bundled specs' (or ``--spec``'s) OpInfo and ModuleInfo items.  An item is *stale*
when the shipped file has no entry (nor failure) for its test id under the installed torch and
the current capture format; entries of ids no longer in the specs are dropped.  ``--check``
lists the stale ids and exits 1 if there are any (0 otherwise) without capturing.  Without it
only the stale items are captured — taken first from the local index cache ``--cache``
(``.relay/index``: the same capture, same torch and format), else captured here — and the file
is rewritten.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from selection.index.op_index import CAPTURE_FORMAT, TestOpIndex, torch_version
from selection.index.shipped import read_shipped, write_shipped


def stale_ids(ids: list[str], entries: dict, failures: dict) -> list[str]:
    """The ids with neither an entry nor a recorded failure."""
    return [t for t in ids if t not in entries and t not in failures]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m selection.index.regenerate", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="list stale items, exit 1 if any; capture nothing")
    ap.add_argument("--spec", action="append", type=Path, help="spec file (default: the bundled specs)")
    ap.add_argument("--cache", type=Path, default=Path(".relay/index"), help="local index cache to reuse")
    ap.add_argument("--device", default="spyre", choices=("spyre", "cpu"))
    args = ap.parse_args(argv)
    from test_specs.expand.universe import expand

    items = [i for i in expand(args.spec) if i.op is not None or i.module is not None]
    ids = [i.id for i in items]
    torch = torch_version()
    entries, failures = read_shipped(args.device, torch, CAPTURE_FORMAT)
    stale = stale_ids(ids, entries, failures)
    print(f"shipped index ({args.device}, torch {torch}, capture format {CAPTURE_FORMAT}): "
          f"{len(ids) - len(stale)} of {len(ids)} items current, {len(stale)} stale", file=sys.stderr)
    if args.check:
        for t in stale[:20]:
            print(f"stale: {t}")
        return 1 if stale else 0
    cached = args.cache / f"op_index-v{CAPTURE_FORMAT}-{torch}-{args.device}.json"
    local = json.loads(cached.read_text()) if cached.exists() else {}
    local_failures = cached.with_suffix(".failures.json")
    local_f = json.loads(local_failures.read_text()) if local_failures.exists() else {}
    wanted = set(ids)
    entries = {k: v for k, v in entries.items() if k in wanted}
    failures = {k: v for k, v in failures.items() if k in wanted}
    reused = [t for t in stale if t in local or t in local_f]
    entries.update({t: local[t] for t in reused if t in local})
    failures.update({t: local_f[t] for t in reused if t in local_f})
    todo = [i for i in items if i.id in set(stale) - set(reused)]
    if todo:
        index = TestOpIndex.build(todo, device=args.device, cache_dir=None)
        entries.update(index.entries)
        failures.update(index.failures)
    path = write_shipped(args.device, torch, CAPTURE_FORMAT, entries, failures)
    print(f"wrote {path}: {len(entries)} entries, {len(failures)} failures "
          f"({len(reused)} from {cached}, {len(todo)} captured)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
