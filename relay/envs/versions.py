"""Torch release pairs: ``torch==2.13.0..torch==2.14.1`` names an upgrade to replay.

The change set of a pair is built from the two release wheels (fetched with pip, cached); each
side of the replay then runs in its own environment (``relay.envs.environments``).
"""

from __future__ import annotations

import re
from pathlib import Path

from relay.changes.builder import build_changeset
from relay.envs.environments import fetch_wheel
from relay.errors import ChangeSourceError, EnvironmentError_, InputError
from selection.models import ChangeSet

__all__ = ["VERSION_PAIR", "version_pair", "changeset_from_versions"]

VERSION_PAIR = re.compile(r"^(?P<base>torch==[^\s]+?)\.\.(?P<head>torch==[^\s]+)$")


def version_pair(ref: str) -> tuple[str, str] | None:
    """``("torch==2.13.0", "torch==2.14.1")`` for ``torch==2.13.0..torch==2.14.1``, else ``None``."""
    m = VERSION_PAIR.match(ref.strip())
    return (m.group("base"), m.group("head")) if m else None


def changeset_from_versions(base_req: str, head_req: str, wheel_dir: Path) -> ChangeSet:
    """The ChangeSet between two torch releases (``torch==X``), from their wheels.

    The wheels are fetched with ``pip download --no-deps`` into ``wheel_dir`` (cached); raises
    ``InputError`` when a wheel cannot be had or read.
    """
    try:
        old = fetch_wheel(base_req, wheel_dir)
        new = fetch_wheel(head_req, wheel_dir)
        cs = build_changeset(old, new, title=f"{base_req} → {head_req}")
    except (EnvironmentError_, ChangeSourceError) as exc:
        raise InputError(str(exc)) from None
    return cs.model_copy(update={"base": base_req, "head": head_req})
