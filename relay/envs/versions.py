"""Torch release pairs: ``torch==2.13.0..torch==2.14.1`` names an upgrade to replay.

The change set of a pair is built from the two release wheels (fetched with pip, cached); each
side of the replay then runs in its own environment (``relay.envs.environments``).
"""

from __future__ import annotations

from pathlib import Path

from relay.changes.builder import build_changeset
from relay.envs.download import Progress
from relay.envs.environments import fetch_wheel
from relay.errors import ChangeSourceError, EnvironmentError_, InputError
from selection.models import ChangeSet

__all__ = ["version_pair", "changeset_from_versions"]

_REQUIREMENT = "torch=="


def _release(side: str, ref: str) -> str:
    """``side`` checked to be ``torch==<PEP 440 version>``; raises ``InputError`` naming ``ref``."""
    from packaging.version import InvalidVersion, Version

    if not side.startswith(_REQUIREMENT):
        raise InputError(f"{ref}: {side!r} is not a torch release; write torch==X..torch==Y")
    try:
        Version(side[len(_REQUIREMENT):])
    except InvalidVersion:
        raise InputError(f"{ref}: {side[len(_REQUIREMENT):]!r} is not a version (PEP 440, e.g. "
                         "2.14.1); write torch==X..torch==Y") from None
    return side


def version_pair(ref: str) -> tuple[str, str] | None:
    """``("torch==2.13.0", "torch==2.14.1")`` for ``torch==2.13.0..torch==2.14.1``; ``None`` when
    ``ref`` is no version pair (it does not start with ``torch==`` or has no ``..``).

    Checked before anything is downloaded: raises ``InputError`` for a malformed pair — three
    dots (git's merge-base form, which two releases do not have), a side that is not
    ``torch==<version>``, or the same release on both sides.
    """
    text = ref.strip()
    if not text.startswith(_REQUIREMENT) or ".." not in text:
        return None
    if "..." in text:
        raise InputError(f"{text}: a version pair has two dots, torch==X..torch==Y (three dots is "
                         "git's merge-base form)")
    base, _, head = text.partition("..")
    pair = (_release(base, text), _release(head, text))
    if pair[0] == pair[1]:
        raise InputError(f"{text}: both sides are {base}; a version pair compares two releases")
    return pair


def changeset_from_versions(base_req: str, head_req: str, wheel_dir: Path,
                            progress: Progress | None = None) -> ChangeSet:
    """The ChangeSet between two torch releases (``torch==X``), from their wheels.

    The wheels are fetched with ``pip download --no-deps`` into ``wheel_dir`` (cached); raises
    ``InputError`` when a wheel cannot be had or read; ``progress`` sees each download's bytes.
    """
    try:
        old = fetch_wheel(base_req, wheel_dir, progress=progress)
        new = fetch_wheel(head_req, wheel_dir, progress=progress)
        cs = build_changeset(old, new, title=f"{base_req} → {head_req}")
    except (EnvironmentError_, ChangeSourceError) as exc:
        raise InputError(str(exc)) from None
    return cs.model_copy(update={"base": base_req, "head": head_req})
