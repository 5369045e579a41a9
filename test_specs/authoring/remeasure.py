"""Bring the measured discovery results up to date with a run of the specs as they are.

``python -m test_specs.authoring.remeasure DISCOVERY.jsonl.gz RUN.json --out NEW.jsonl.gz``

``generate`` builds the default specs from a discovery sweep in which every item ran as
``mandatory_success``.  When the device changes (a capability rule, a kernel added), a run of
the specs in their declared modes (``relay run --spec test_specs/specs/ --json``) measures the
same thing for every item it executes: an ``xfail`` item runs its test body too, so ``xfailed``
means it fails and ``xpassed`` that it passes.  Per item id of the discovery results:

* the run ``passed`` / ``flaky`` / ``xpassed`` it → ``passed`` (message dropped);
* the run ``failed`` / ``xfailed`` it → ``failed`` with the run's message (the discovery
  message when the run kept none);
* ``crashed`` / ``timed_out`` → that outcome and message;
* ``skipped`` (a ``skip`` item is not executed, so it says nothing new) or absent → the
  discovery row unchanged.

Writes the merged rows (same order) and prints how many items changed outcome, by transition.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
from pathlib import Path
from typing import Any

__all__ = ["merge"]

_PASS = {"passed", "flaky", "xpassed"}
_FAIL = {"failed", "xfailed"}


def merge(discovery: list[dict[str, Any]], run: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]],
                                                                                       collections.Counter[str]]:
    """The discovery rows updated by ``run`` (test id → result row); and the transitions."""
    out = []
    moves: collections.Counter[str] = collections.Counter()
    for row in discovery:
        r = run.get(row["id"])
        new = dict(row)
        if r is not None and r["outcome"] in _PASS:
            new.update(outcome="passed", message=None)
        elif r is not None and r["outcome"] in _FAIL:
            new.update(outcome="failed", message=r.get("message") or row.get("message"))
        elif r is not None and r["outcome"] in ("crashed", "timed_out"):
            new.update(outcome=r["outcome"], message=r.get("message"))
        if new["outcome"] != row["outcome"] or new.get("message") != row.get("message"):
            moves[f"{row['outcome']} -> {new['outcome']}"] += 1
        out.append(new)
    return out, moves


def _read_rows(path: Path) -> list[dict[str, Any]]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    text = raw.decode("utf-8")
    try:
        doc = json.loads(text)
        return doc["results"] if isinstance(doc, dict) else doc
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("discovery", type=Path)
    ap.add_argument("run", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    rows, moves = merge(_read_rows(a.discovery), {r["id"]: r for r in _read_rows(a.run)})
    data = "".join(json.dumps(r, sort_keys=False) + "\n" for r in rows).encode("utf-8")
    a.out.write_bytes(gzip.compress(data, mtime=0) if a.out.suffix == ".gz" else data)
    for move, n in moves.most_common():
        print(f"{n:6d}  {move}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
