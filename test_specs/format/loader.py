"""Load spec files, reporting every error of a file at once as ``file:line:col: message``.

- ``load_spec(path) -> Spec`` parses one file; raises ``SpecLoadError`` (carrying all of that
  file's ``SpecError``s) on a YAML error, duplicate key, or schema violation.
- ``parse_spec(path) -> (Spec | None, [SpecError])`` is the same without raising (for
  ``test_specs.authoring.check``, which checks many files and adds semantic and strict-mode errors).

The layout copies Zuul's ``LoadingErrors`` and Tavern's ``BadSchemaError``: collect, do not stop
at the first.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from test_specs.format.comments import comment_block_above, comment_reason
from test_specs.format.schema import SpecDocument, SuiteConfig
from test_specs.format.yamlmarks import Mark, Pos, YamlTooLarge, load_yaml, locate, read_yaml_text


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
        """The file stem: the first part of every item id of this spec."""
        return self.path.stem

    def pos(self, *loc: Any) -> Pos:
        """Position of the node at ``loc`` (or its deepest present ancestor)."""
        return locate(self.marks, ("test_suite_config",) + loc)

    @functools.cached_property
    def _lines(self) -> list[str]:
        try:
            return self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return []

    def comment_reason(self, loc: tuple[Any, ...], *keys: str) -> str | None:
        """The YAML comment that gives the reason for the entry at ``loc`` (torch-spyre writes
        reasons as comments): a trailing comment on the line of one of its ``keys`` (in order),
        else the comment block right above the entry (``test_specs.format.comments``); else ``None``.
        For a list element (a name in ``names``) the element's own line counts as its key line."""
        full = ("test_suite_config",) + loc
        item = self.marks.get(full)
        if item is None:
            return None
        lines = [m.key.line for m in (self.marks.get(full + (k,)) for k in keys) if m is not None]
        return comment_reason(self._lines, item.value.line, *(lines or [item.value.line]))

    def test_reason(self, fi: int, ti: int, ni: int | None = None) -> str | None:
        """The comment reason of the ``ni``-th name of ``files[fi].tests[ti]`` (its trailing comment,
        or the comment block above it or above an earlier name of the list), else that of the entry
        (its ``mode``/``names`` lines or the block above it); ``None`` if there is none."""
        base = ("files", fi, "tests", ti, "names")
        named = self.comment_reason(base + (ni,)) if ni is not None else None
        for prev in range((ni or 0) - 1, -1, -1):  # a comment above a name heads the names after it
            if named:
                break
            p = self.marks.get(("test_suite_config",) + base + (prev,))
            named = comment_block_above(self._lines, p.value.line) if p else None
        return named or self.comment_reason(("files", fi, "tests", ti), "mode", "names")

    def error(self, loc: tuple[Any, ...], message: str) -> SpecError:
        """A ``SpecError`` at the node ``loc`` (path under ``test_suite_config``) of this file."""
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


def parse_spec(path: Path) -> tuple[Spec | None, list[SpecError]]:
    """``(spec, errors)`` of one file: ``spec`` is ``None`` when it does not load; never raises."""
    fname = str(path)
    try:
        text = read_yaml_text(path)
    except YamlTooLarge as e:
        return None, [SpecError(fname, 1, 1, f"spec too large: {e}")]
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
    spec, errors = parse_spec(Path(path))
    if errors or spec is None:
        raise SpecLoadError(sorted(errors))
    return spec
