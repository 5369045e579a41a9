"""Helpers for the ChangeSet builder tests: write small trees and wheels."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``{relative_path: content}`` below ``root`` and return ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def write_wheel(path: Path, files: dict[str, str | bytes], *, name: str = "demo",
                version: str = "1.0", record: bool = True,
                omit_from_record: tuple[str, ...] = (), lie_in_record: dict[str, bytes] | None = None
                ) -> Path:
    """Write a wheel with ``files``, a METADATA and (unless ``record=False``) a RECORD whose
    hashes are right except for ``omit_from_record`` (left out) and ``lie_in_record``
    (hashed as if the member held other bytes)."""
    dist = f"{name}-{version}.dist-info"
    lie_in_record = lie_in_record or {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        rows = []
        for rel, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            zf.writestr(rel, data)
            if rel not in omit_from_record:
                digest = hashlib.sha256(lie_in_record.get(rel, data)).digest()
                b64 = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
                rows.append(f"{rel},sha256={b64},{len(data)}")
        zf.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        zf.writestr(f"{dist}/WHEEL", f"Wheel-Version: 1.0\nTag: py3-none-any\nBuild: {version}\n")
        if record:
            rows.append(f"{dist}/RECORD,,")
            zf.writestr(f"{dist}/RECORD", "\n".join(rows) + "\n")
    return path


OLD = {
    "pkg/__init__.py": "from .mod import f\n",
    "pkg/mod.py": "def f(x):\n    return x + 1\n\n\ndef g():\n    return 2\n",
    "pkg/gone.py": "def old_only():\n    pass\n\nclass Old:\n    def m(self):\n        pass\n",
    "pkg/data.bin": b"\x00\x01",
    "pkg/same.txt": "same\n",
}
NEW = {
    "pkg/__init__.py": "from .mod import f\n",
    "pkg/mod.py": "def f(x):\n    return x + 2\n\n\ndef g():\n    return 2\n",
    "pkg/new.py": "VALUE: int = 3\n\nasync def h():\n    pass\n",
    "pkg/data.bin": b"\x00\x02",
    "pkg/same.txt": "same\n",
}
