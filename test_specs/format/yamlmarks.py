"""A YAML loader that keeps line/column marks and reports duplicate keys instead of overwriting.

``load_yaml(text, filename)`` returns ``(data, marks, problems)``:

- ``data``: plain Python (``yaml.SafeLoader`` semantics);
- ``marks``: ``{path: Mark}`` for every node, where ``path`` is the tuple of mapping keys and
  list indices from the root (the same shape as a pydantic error ``loc``); ``Mark.key`` is where
  the mapping *key* sits (used for "unknown key" errors), ``Mark.value`` where its value starts;
- ``problems``: every duplicate key and the YAML syntax error, if any, as
  ``(line, col, message)`` with 1-based line and column.

Pattern from Zuul's ``ZuulSafeLoader`` (marks + duplicate-key rejection); PyYAML itself lets a
later duplicate silently win, which hides mistakes in hand-edited specs.

Input bounds (issue 17), checked here at the entry point so every caller gets them:

- ``read_yaml_text(path)`` refuses a file over ``MAX_YAML_BYTES`` (2 MiB) before reading it
  (``YamlTooLarge``): parsing keeps a node and a mark per scalar, so time and memory grow with
  the node count — the bundled 1.08 MB ``opinfo_all.yaml`` takes ~40 s / 400 MB to check under
  load, a 1.5 MB one-scalar-per-line list ~90 s / 835 MB, 30 MB never finished;
- an integer scalar over Python's 4,300-digit conversion limit (``sys.get_int_max_str_digits``)
  becomes a problem at its mark instead of PyYAML's ``ValueError`` traceback.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path as FilePath
from typing import Any

import yaml

Path = tuple[str | int, ...]
#: the largest YAML file read (bytes); the biggest bundled spec is 1.08 MB
MAX_YAML_BYTES = 2 * 1024 * 1024
_INT_TAG = "tag:yaml.org,2002:int"


class YamlTooLarge(ValueError):
    """A YAML file over ``MAX_YAML_BYTES``; the message names its size and the limit."""


def read_yaml_text(path: FilePath, limit: int = MAX_YAML_BYTES) -> str:
    """The UTF-8 text of ``path``; raises ``YamlTooLarge`` over ``limit`` bytes (checked on the
    file's size, then on what was read), and ``OSError`` / ``UnicodeDecodeError`` as
    ``Path.read_text``."""
    size = path.stat().st_size
    if size > limit:
        raise YamlTooLarge(f"{size:,} bytes of YAML; at most {limit:,} are read")
    with path.open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise YamlTooLarge(f"over {limit:,} bytes of YAML; at most {limit:,} are read")
    return data.decode("utf-8")
#: libyaml's parser when PyYAML was built with it (same nodes and marks, ~10x faster on the
#: generated whole-database specs), else the pure-Python one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Pos:
    line: int  # 1-based
    col: int  # 1-based


@dataclass(frozen=True)
class Mark:
    key: Pos  # the mapping key (equals ``value`` for list elements and the root)
    value: Pos


def _pos(mark: yaml.Mark) -> Pos:
    return Pos(mark.line + 1, mark.column + 1)


def _walk(node: yaml.Node, path: Path, key_pos: Pos, marks: dict[Path, Mark],
          problems: list[tuple[int, int, str]]) -> None:
    marks[path] = Mark(key=key_pos, value=_pos(node.start_mark))
    if isinstance(node, yaml.ScalarNode) and node.tag == _INT_TAG:
        digits = sum(c.isdigit() for c in node.value)
        limit = sys.get_int_max_str_digits()
        if limit and digits > limit:
            pos = _pos(node.start_mark)
            problems.append((pos.line, pos.col, f"integer of {digits:,} digits; at most "
                                                f"{limit:,} are allowed (quote it for a string)"))
    elif isinstance(node, yaml.MappingNode):
        seen: dict[Any, Pos] = {}
        for knode, vnode in node.value:
            key = knode.value if isinstance(knode, yaml.ScalarNode) else str(knode.value)
            kpos = _pos(knode.start_mark)
            if key in seen:
                first = seen[key]
                problems.append((kpos.line, kpos.col,
                                 f"duplicate key {key!r} (first defined at line {first.line})"))
                continue
            seen[key] = kpos
            _walk(vnode, path + (key,), kpos, marks, problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, child in enumerate(node.value):
            _walk(child, path + (i,), _pos(child.start_mark), marks, problems)


def load_yaml(text: str, filename: str = "<string>") -> tuple[Any, dict[Path, Mark], list[tuple[int, int, str]]]:
    """Parse one YAML document; never raises for bad YAML (it becomes a problem at its mark)."""
    marks: dict[Path, Mark] = {}
    problems: list[tuple[int, int, str]] = []
    loader = _LOADER(text)
    loader.name = filename
    try:
        node = loader.get_single_node()
        if node is None:
            return None, marks, problems
        _walk(node, (), _pos(node.start_mark), marks, problems)
        if any("digits; at most" in msg for _, _, msg in problems):
            return None, marks, problems  # constructing it would raise ValueError
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark or e.context_mark
        line, col = (m.line + 1, m.column + 1) if m else (1, 1)
        problems.append((line, col, f"YAML syntax error: {e.problem or e}"))
        return None, marks, problems
    except yaml.YAMLError as e:  # pragma: no cover - unmarked errors are rare
        problems.append((1, 1, f"YAML error: {e}"))
        return None, marks, problems
    finally:
        loader.dispose()
    return data, marks, problems


def locate(marks: dict[Path, Mark], loc: tuple[Any, ...], *, key: bool = False) -> Pos:
    """The position for a pydantic error ``loc``: the deepest prefix of ``loc`` present in ``marks``.

    Components pydantic inserts that are not in the document (union member tags such as
    ``'str'`` or ``'function-after[...]'``) are skipped.  ``key=True`` points at the mapping key
    (for ``extra_forbidden``) rather than at its value.
    """
    path: Path = ()
    for part in loc:
        if path + (part,) in marks:
            path = path + (part,)
    m = marks.get(path)
    if m is None:
        return Pos(1, 1)
    return m.key if key else m.value
