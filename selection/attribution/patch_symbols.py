"""Top-level Python symbols touched by a unified-diff patch (for ChangeSets without ``symbols``).

A ChangeSet from ``git diff`` or GitHub's PR-files API carries hunks, not an AST comparison.
Each hunk names its enclosing top-level definition in the ``@@ … @@`` header (git's funcname
context), and added/removed lines that start a top-level ``def``/``class`` or assignment name
themselves.  Lines inside a hunk are attributed to the nearest preceding top-level definition.
"""

from __future__ import annotations

import re

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(?P<context>.*)$")
TOP_DEF = re.compile(r"^(?:async\s+)?(?:def|class)\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)")
TOP_ASSIGN = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]*)?=(?!=)")


def _top_name(line: str) -> str | None:
    m = TOP_DEF.match(line) or TOP_ASSIGN.match(line)
    return m.group("name") if m else None


def symbols_from_patch(patch: str) -> list[str]:
    """Sorted top-level names a patch touches; ``[]`` for a patch with no hunks.

    >>> symbols_from_patch("@@ -1,2 +1,2 @@ def addcmul(a, b):\\n-    return a\\n+    return b\\n")
    ['addcmul']
    """
    found: set[str] = set()
    current: str | None = None
    for line in patch.splitlines():
        m = HUNK.match(line)
        if m:
            current = _top_name(m.group("context").strip())
            continue
        if not line or line[0] not in "+- ":
            continue
        body = line[1:]
        name = _top_name(body)
        if name is not None:
            current = name
            if line[0] in "+-":
                found.add(name)
            continue
        if line[0] in "+-" and body.strip() and current is not None:
            found.add(current)
    return sorted(found)
