"""Warnings about dtypes a spec asks for that the simulated Spyre device refuses.

A spec without ``global.supported_dtypes`` expands every op to every dtype its OpInfo supports
(torch-spyre's rule: effective dtypes = global ∩ op ∩ test, + include, − exclude), so it asks for
float64, complex and small-integer items the device rejects (``spyre_backend.support``: float64
and every complex dtype are refused by every op; the item dtypes are float16, bfloat16, float32,
int64 and bool — the last two as torch-spyre's configs list them in ``supported_dtypes``).
Such a spec is valid — ``--strict`` accepts it — but
its refused items are classified ``skip`` by stage 3 and cannot be captured into the test →
aten-op index.  ``dtype_warnings`` says so, as ``file:line:col`` warnings that never fail a check
(``relay specs check`` prints them after the errors).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from test_specs.format.loader import Spec, SpecError, parse_spec

__all__ = ["dtype_warnings", "spec_dtype_warnings"]


def _device_dtypes() -> frozenset[str] | None:
    try:
        from spyre_backend.support import SUPPORTED_DTYPES
    except Exception:  # noqa: BLE001 — no support table: nothing to compare against
        return None
    return frozenset(SUPPORTED_DTYPES)


def spec_dtype_warnings(spec: Spec, supported: frozenset[str]) -> list[SpecError]:
    """The warnings of one loaded spec whose dtypes the device (``supported``) may refuse: each
    listed ``global.supported_dtypes`` entry outside ``supported``, and — for a spec whose
    ``op_db`` items land on refused dtypes — one warning counting them per dtype."""
    out: list[SpecError] = []
    listed = spec.config.global_.supported_dtypes
    for di, d in enumerate(listed):
        if d.name not in supported:
            out.append(spec.error(("global", "supported_dtypes", di),
                                  f"warning: dtype {d.name!r} is refused by the Spyre device "
                                  f"(supported: {', '.join(sorted(supported))}); its items are "
                                  "classified skip"))
    if not any(f.source is not None for f in spec.config.files):
        return out
    from test_specs.expand.universe import expand_spec  # imports torch and op_db: only for op_db specs

    try:
        items = expand_spec(spec)
    except ValueError:  # semantic errors: check_specs reports them
        return out
    refused = Counter(i.dtype for i in items if i.dtype not in supported)
    if refused and not listed:
        counts = ", ".join(f"{d}: {n}" for d, n in sorted(refused.items()))
        out.append(spec.error(("global",) if spec.config.global_ is not None else (),
                              f"warning: no global.supported_dtypes, so {sum(refused.values())} items "
                              f"use dtypes the Spyre device refuses ({counts}); they are classified "
                              "skip and cannot be indexed — list global.supported_dtypes "
                              f"(the device supports {', '.join(sorted(supported))})"))
    return out


def dtype_warnings(paths: Iterable[str | Path]) -> list[SpecError]:
    """``spec_dtype_warnings`` for every file of ``paths`` (directories searched for ``*.yaml``)
    that loads; files with errors are skipped (``check_specs`` reports those).  Sorted."""
    supported = _device_dtypes()
    if supported is None:
        return []
    out: list[SpecError] = []
    for p in map(Path, paths):
        for f in sorted(p.rglob("*.yaml")) if p.is_dir() else [p]:
            spec, errors = parse_spec(f)
            if spec is not None and not errors:
                out.extend(spec_dtype_warnings(spec, supported))
    return sorted(set(out))
