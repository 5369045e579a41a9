"""Check spec files: every error of every file at once, as ``file:line:col: message``.

``check_specs(paths, strict=False) -> list[SpecError]`` (what ``relay specs check`` prints)
never raises for bad content: YAML syntax, duplicate keys, unknown keys, bad values (schema;
``loader.parse_spec``), then semantic errors of ``source: op_db`` entries (unknown template,
unknown op, an op/template pair listed twice; ``expand.semantic_errors``).  ``strict=True``
also reports every ``skip``/``xfail`` (test mode, ``unlisted_test_mode``, ``force_xfail``) that
states no reason: no ``reason``/``issue`` key and no YAML comment (``strict_errors``).

Errors are sorted by (file, line, col) and deduplicated.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from test_specs.format.loader import Spec, SpecError, parse_spec


def _has_unlisted(f: Any) -> bool:
    """Whether a ``source`` entry leaves a built-in template unlisted (so unlisted items exist)."""
    from test_specs.templates.registry import (
        TEMPLATES,  # imports torch: only for strict checks of source entries
    )

    listed = {n for t in f.tests for n in t.names}
    return any(t.builtin and n not in listed for n, t in TEMPLATES.items())


def strict_errors(spec: Spec) -> list[SpecError]:
    """Every skip/xfail in ``spec`` that does not say why (our superset's rule): it needs a
    ``reason`` (or ``issue``) key, or a YAML comment on its line or right above its entry, the
    way torch-spyre writes reasons (``Spec.comment_reason``)."""
    out: list[SpecError] = []

    def need(loc: tuple[Any, ...], key: str, what: str, reason: str | None, issue: str | None,
             comment: bool | None = None) -> None:
        if not (reason or issue or (spec.comment_reason(loc, key) if comment is None else comment)):
            out.append(spec.error(loc + (key,), f"{what} needs a reason: a 'reason' or 'issue' key, or a YAML "
                                                 "comment on or above the entry (strict mode)"))

    cfg = spec.config
    for fi, f in enumerate(cfg.files):
        if f.unlisted_test_mode != "mandatory_success" and f.source is not None and _has_unlisted(f):
            need(("files", fi), "unlisted_test_mode", f"unlisted_test_mode {f.unlisted_test_mode}", f.reason, f.issue)
        for ti, t in enumerate(f.tests):
            if t.mode != "mandatory_success":
                said = spec.test_reason(fi, ti) is not None or all(
                    spec.test_reason(fi, ti, ni) for ni in range(len(t.names)))
                need(("files", fi, "tests", ti), "mode", f"mode {t.mode}", t.reason, t.issue, said)
    for oi, o in enumerate(cfg.global_.supported_ops or []):
        if o.force_xfail:
            need(("global", "supported_ops", oi), "force_xfail", f"force_xfail on op {o.name!r}", o.reason, o.issue)
    for di, d in enumerate(cfg.global_.supported_dtypes):
        if d.force_xfail:
            need(("global", "supported_dtypes", di), "force_xfail", f"force_xfail on dtype {d.name!r}", d.reason,
                 d.issue)
    return out


def check_specs(paths: Iterable[str | Path], strict: bool = False) -> list[SpecError]:
    """Check every file in ``paths`` (directories are searched for ``*.yaml``); all errors, sorted."""
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(p.rglob("*.yaml")) if p.is_dir() else [p])
    errors: list[SpecError] = []
    for f in files:
        spec, errs = parse_spec(f)
        errors.extend(errs)
        if spec is None or errs:
            continue
        if any(fe.source is not None for fe in spec.config.files):
            from test_specs.expand.universe import semantic_errors  # imports torch and op_db: only when needed

            errors.extend(semantic_errors(spec))
        if strict:
            errors.extend(strict_errors(spec))
    return sorted(set(errors))
