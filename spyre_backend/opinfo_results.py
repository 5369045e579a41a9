"""The committed OpInfo outcome table: how each (OpInfo, dtype) fares on Spyre vs the CPU.

The table lives in ``opinfo_results.json`` next to this module and is produced by
``python -m spyre_backend.opinfo_check --all --out spyre_backend/opinfo_results.json``
(issue 3, "Done when": the full float32 and float16 ``op_db`` against the CPU reference).
Default test specs read it through ``load()``; treat the file format below as stable
(``"format": 1``; a new field may be added, an existing one never changes meaning).

File format (JSON, one result object per line for readable diffs)::

    {"format": 1, "torch": "2.13.0+cpu", "precision": "fp16", "tolerances": {...},
     "generated_by": "...", "statuses": {...},
     "results": [
      {"subject": "add", "dtype": "float16", "status": "pass", "samples": 41, ...},
      ...]}

Result fields (absent/null when not applicable):

* ``subject`` — OpInfo name, ``"<name>.<variant_test_name>"`` for a variant (``"nn.functional.gelu"``,
  ``"div.floor_rounding"``);
* ``dtype`` — ``"float32"`` or ``"float16"``;
* ``status`` — one of ``STATUSES`` (below);
* ``samples`` — number of samples run (all of them for pass/mismatch; up to the failing one otherwise);
* ``mismatched`` — number of samples outside tolerance (mismatch);
* ``max_abs_err`` / ``max_rel_err`` — largest finite absolute / relative error over all samples
  (mismatch; float, or null when the mismatch is not numeric, e.g. NaN placement or shape);
* ``aten_op`` — the aten overload Spyre refused (not_implemented), e.g. ``"aten::_index_put_impl_"``;
* ``reason`` — human text: the refusal reason, the exception, or why the pair was skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["STATUSES", "Outcome", "load", "load_file", "dump", "summary"]

FORMAT = 1
TABLE_FILE = "opinfo_results.json"

STATUSES = {
    "pass": "every sample ran on Spyre and matched the CPU within the dtype's tolerance",
    "mismatch": "every sample ran; at least one differed from the CPU beyond tolerance",
    "not_implemented": "Spyre refused an aten op the OpInfo needs (unsupported op or dtype)",
    "cpu_reference_error": "the CPU reference itself raised on a sample (OpInfo/sample problem)",
    "error": "Spyre raised an unexpected exception, crashed or timed out",
    "skip": "the OpInfo declares no such dtype on the CPU, or yields no samples; nothing ran",
}


@dataclass(frozen=True)
class Outcome:
    """One (subject, dtype) row of the table (field meanings in the module docstring)."""

    subject: str
    dtype: str
    status: str
    samples: int = 0
    mismatched: int | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    aten_op: str | None = None
    reason: str | None = None

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def to_json(self) -> dict[str, Any]:
        """The row as written to the file (null fields dropped)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


_FIELDS = {f.name for f in fields(Outcome)}


def _parse(data: dict[str, Any]) -> dict[tuple[str, str], Outcome]:
    if data.get("format") != FORMAT:
        raise ValueError(f"opinfo results: unsupported format {data.get('format')!r} (want {FORMAT})")
    table: dict[tuple[str, str], Outcome] = {}
    for row in data["results"]:
        outcome = Outcome(**{k: v for k, v in row.items() if k in _FIELDS})
        if outcome.status not in STATUSES:
            raise ValueError(f"opinfo results: unknown status {outcome.status!r} for {outcome.subject}")
        table[(outcome.subject, outcome.dtype)] = outcome
    return table


def load() -> dict[tuple[str, str], Outcome]:
    """The committed table as ``{(subject, dtype): Outcome}``, e.g. ``load()[("add", "float16")]``.

    Raises:
        ValueError: the file has another ``format`` or an unknown status.
    """
    text = resources.files(__package__).joinpath(TABLE_FILE).read_text(encoding="utf-8")
    return _parse(json.loads(text))


def load_file(path: str | Path) -> dict[tuple[str, str], Outcome]:
    """Like ``load()`` for a table at ``path`` (e.g. a fresh, uncommitted sweep)."""
    return _parse(json.loads(Path(path).read_text(encoding="utf-8")))


def dump(outcomes: Iterable[Outcome], path: str | Path, meta: dict[str, Any]) -> None:
    """Write ``outcomes`` (sorted by subject, dtype) with header ``meta`` in the file format."""
    rows = sorted(outcomes, key=lambda o: (o.subject, o.dtype))
    header = {"format": FORMAT, **meta, "statuses": STATUSES}
    head = json.dumps(header, indent=1, sort_keys=False)[:-2]  # drop the closing "\n}"
    lines = [json.dumps(o.to_json(), sort_keys=False) for o in rows]
    Path(path).write_text(head + ',\n "results": [\n' + ",\n".join(lines) + "\n ]\n}\n", encoding="utf-8")


def summary(table: dict[tuple[str, str], Outcome]) -> dict[str, dict[str, int]]:
    """``{dtype: {status: count}}`` over ``table``."""
    out: dict[str, dict[str, int]] = {}
    for (_, dtype), o in sorted(table.items()):
        per = out.setdefault(dtype, {s: 0 for s in STATUSES})
        per[o.status] += 1
    return out
