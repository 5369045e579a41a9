"""Reasons written as YAML comments, the way torch-spyre's configs write them.

torch-spyre's configs (RFC 1287) state why a test is skipped or expected to fail in a comment:
on the line of the entry's ``mode``/``force_xfail`` key (``mode: xfail  # NotImplementedError``)
or in the block of comment lines directly above the entry (``# These tests exercise ...`` over
``- names:``).  PyYAML drops comments, so this reads them from the source lines.

``comment_reason(lines, item_line, *key_lines) -> str | None``: the first trailing comment of
``key_lines``, else the comment block ending right above ``item_line`` (1-based line numbers;
blank lines end a block), joined with spaces; ``None`` when neither exists.
"""

from __future__ import annotations


def trailing_comment(line: str) -> str | None:
    """The text of a ``# comment`` after YAML content on ``line`` (quotes respected)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            if not line[:i].strip():
                return None  # a whole-line comment, not a trailing one
            return line[i + 1:].strip() or None
    return None


def comment_block_above(lines: list[str], line: int) -> str | None:
    """The whole-line comments directly above 1-based ``line``, top to bottom, joined."""
    out: list[str] = []
    i = line - 2
    while i >= 0 and lines[i].lstrip().startswith("#"):
        out.append(lines[i].lstrip()[1:].strip())
        i -= 1
    text = " ".join(x for x in reversed(out) if x)
    return text or None


def comment_reason(lines: list[str], item_line: int, *key_lines: int) -> str | None:
    """See the module docstring."""
    for key_line in key_lines:
        t = trailing_comment(lines[key_line - 1]) if 0 < key_line <= len(lines) else None
        if t:
            return t
    if 0 < item_line <= len(lines):
        return comment_block_above(lines, item_line)
    return None
