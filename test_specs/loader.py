"""Load and check spec files, reporting every error at once as ``file:line:col: message``.

- ``load_spec(path) -> Spec`` parses one file; raises ``SpecLoadError`` (carrying all of that
  file's ``SpecError``s) on a YAML error, duplicate key, or schema violation.
- ``check_specs(paths, strict=False) -> list[SpecError]`` checks many files and never raises for
  bad content: YAML syntax, duplicate keys, unknown keys, bad values (schema), then semantic
  errors of ``source: op_db`` entries (unknown template, unknown op, an op/template pair listed
  twice; see ``expand.semantic_errors``).  ``strict=True`` also reports every ``skip``/``xfail``
  (test mode, ``unlisted_test_mode``, ``force_xfail``) that lacks a ``reason`` or an ``issue``.

Errors are sorted by (file, line, col).  The layout copies Zuul's ``LoadingErrors`` and Tavern's
``BadSchemaError``: collect, do not stop at the first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError

from test_specs.schema import SpecDocument, SuiteConfig
from test_specs.yamlmarks import Mark, Pos, locate, load_yaml


@dataclass(frozen=True, order=True)
class SpecError:
    """One problem in one spec file; ``line``/``col`` are 1-based."""

    file: str
    line: int
    col: int
    message: str

    def format(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.message}"

    def __str__(self) -> str:
        return self.format()


class SpecLoadError(Exception):
    """Raised by ``load_spec``; ``errors`` holds every problem found in the file."""

    def __init__(self, errors: list[SpecError]):
        self.errors = errors
        super().__init__("\n".join(e.format() for e in errors))


@dataclass(frozen=True)
class Spec:
    """A loaded spec file: ``suite`` is the file stem (the first part of every item id)."""

    path: Path
    config: SuiteConfig
    marks: dict[tuple[Any, ...], Mark] = field(repr=False, default_factory=dict)

    @property
    def suite(self) -> str:
        return self.path.stem

    def pos(self, *loc: Any) -> Pos:
        """Position of the node at ``loc`` (or its deepest present ancestor)."""
        return locate(self.marks, ("test_suite_config",) + loc)

    def error(self, loc: tuple[Any, ...], message: str) -> SpecError:
        p = self.pos(*loc)
        return SpecError(str(self.path), p.line, p.col, message)


def _pydantic_message(err: dict[str, Any]) -> str:
    kind = err["type"]
    loc = err["loc"]
    if kind == "extra_forbidden":
        return f"unknown key {loc[-1]!r}"
    if kind == "missing":
        return f"missing required key {loc[-1]!r}"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    where = ".".join(str(p) for p in loc[1:] if not (isinstance(p, str) and ("[" in p or p in {"str", "int"})))
    return f"{where}: {msg}" if where else msg


#: Specs have no need for many YAML aliases; a few anchors are fine, an expansion bomb is not
#: (k aliases can expand a document about 3**(k/3)-fold: 10 keeps that under 50x).
MAX_ALIASES = 10


def _alias_count(text: str) -> int:
    """Alias tokens (``*name``) in ``text``; 0 when the text does not even scan."""
    import yaml

    try:
        return sum(1 for t in yaml.scan(text) if isinstance(t, yaml.AliasToken))
    except yaml.YAMLError:
        return 0


def _parse(path: Path) -> tuple[Spec | None, list[SpecError]]:
    fname = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        return None, [SpecError(fname, 1, 1, f"cannot read spec: {e.strerror or e}")]
    except UnicodeDecodeError as e:
        return None, [SpecError(fname, 1, 1, f"not UTF-8 text ({e.reason} at byte {e.start})")]
    aliases = _alias_count(text)
    if aliases > MAX_ALIASES:
        return None, [SpecError(fname, 1, 1, f"{aliases} YAML aliases; at most {MAX_ALIASES} "
                                             "are allowed (alias expansion bomb?)")]
    try:
        data, marks, problems = load_yaml(text, fname)
    except RecursionError:
        return None, [SpecError(fname, 1, 1, "recursive YAML alias (a node that contains itself)")]
    errors = [SpecError(fname, line, col, msg) for line, col, msg in problems]
    if errors and data is None:
        return None, errors
    if not isinstance(data, dict) or "test_suite_config" not in data:
        errors.append(SpecError(fname, 1, 1, "not a spec: the root must be a mapping with key 'test_suite_config'"))
        return None, errors
    try:
        doc = SpecDocument.model_validate(data)
    except ValidationError as e:
        for err in e.errors():
            pos = locate(marks, err["loc"], key=err["type"] == "extra_forbidden")
            errors.append(SpecError(fname, pos.line, pos.col, _pydantic_message(err)))
        return None, errors
    return Spec(path=path, config=doc.test_suite_config, marks=marks), errors


def load_spec(path: str | Path) -> Spec:
    """Load one spec file; raises ``SpecLoadError`` if it has any syntax or schema error."""
    spec, errors = _parse(Path(path))
    if errors or spec is None:
        raise SpecLoadError(sorted(errors))
    return spec


def _has_unlisted(f: Any) -> bool:
    """Whether a ``source`` entry leaves a built-in template unlisted (so unlisted items exist)."""
    from test_specs.templates import TEMPLATES

    listed = {n for t in f.tests for n in t.names}
    return any(t.builtin and n not in listed for n, t in TEMPLATES.items())


def strict_errors(spec: Spec) -> list[SpecError]:
    """Every skip/xfail in ``spec`` lacking ``reason`` or ``issue`` (our superset's rule)."""
    out: list[SpecError] = []

    def need(loc: tuple[Any, ...], what: str, reason: str | None, issue: str | None) -> None:
        missing = [k for k, v in (("reason", reason), ("issue", issue)) if not v]
        if missing:
            out.append(spec.error(loc, f"{what} needs {' and '.join(missing)} (strict mode)"))

    cfg = spec.config
    for fi, f in enumerate(cfg.files):
        if f.unlisted_test_mode != "mandatory_success" and f.source is not None and _has_unlisted(f):
            need(("files", fi, "unlisted_test_mode"), f"unlisted_test_mode {f.unlisted_test_mode}", f.reason, f.issue)
        for ti, t in enumerate(f.tests):
            if t.mode != "mandatory_success":
                need(("files", fi, "tests", ti, "mode"), f"mode {t.mode}", t.reason, t.issue)
    for oi, o in enumerate(cfg.global_.supported_ops or []):
        if o.force_xfail:
            need(("global", "supported_ops", oi, "force_xfail"), f"force_xfail on op {o.name!r}", o.reason, o.issue)
    for di, d in enumerate(cfg.global_.supported_dtypes):
        if d.force_xfail:
            need(("global", "supported_dtypes", di, "force_xfail"), f"force_xfail on dtype {d.name!r}", d.reason, d.issue)
    return out


def check_specs(paths: Iterable[str | Path], strict: bool = False) -> list[SpecError]:
    """Check every file in ``paths`` (directories are searched for ``*.yaml``); all errors, sorted."""
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(p.rglob("*.yaml")) if p.is_dir() else [p])
    errors: list[SpecError] = []
    for f in files:
        spec, errs = _parse(f)
        errors.extend(errs)
        if spec is None or errs:
            continue
        if any(fe.source is not None for fe in spec.config.files):
            from test_specs.expand import semantic_errors  # imports op_db: only when needed

            errors.extend(semantic_errors(spec))
        if strict:
            errors.extend(strict_errors(spec))
    return sorted(set(errors))
