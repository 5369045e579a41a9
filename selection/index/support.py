"""The Spyre op support answers classify needs, cached so ``relay select`` does not import torch.

``spyre_backend.support`` answers "does aten op X run on Spyre in dtype D" from its
``support.yaml``; importing it imports the ``spyre_backend`` package, which registers the device
and so imports torch (2 s on a quiet machine, 10+ s on a loaded one) — the largest cost of a
``relay select`` whose indexes are cached.  ``SupportAnswers`` holds the answers for every
(aten op, dtype) of a universe: ``SUPPORTED_DTYPES`` and each non-``None``
``unsupported_reason``, as JSON in ``cache_dir/spyre_support-<digest>.json``, where the digest
is over the bytes of ``spyre_backend/support.py`` and ``support.yaml`` (found with
``importlib.util.find_spec``, which does not import the package).  A changed table makes a new
digest, so answers are never stale.  Unknown pairs (not precomputed) are asked of
``spyre_backend.support`` directly.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from importlib.util import find_spec
from pathlib import Path

from selection.index.cachefile import write_atomic

log = logging.getLogger(__name__)


def _digest() -> str | None:
    spec = find_spec("spyre_backend")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    h = hashlib.sha256()
    for name in ("support.py", "support.yaml"):
        f = root / name
        if not f.is_file():
            return None
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


class SupportAnswers:
    """``supported_dtypes`` and ``unsupported_reason(op, dtype)`` of ``spyre_backend.support``,
    answered from a precomputed table where possible (see the module docstring)."""

    def __init__(self, dtypes: tuple[str, ...] | None, reasons: dict[str, str], known: set[str]) -> None:
        self.dtypes = dtypes
        self.reasons = reasons  # "op|dtype" → reason (only unsupported pairs)
        self.known = known  # "op|dtype" precomputed (supported or not)

    @classmethod
    def load(cls, ops: Iterable[str], dtypes: Iterable[str], cache_dir: Path | None) -> SupportAnswers:
        """The answers for ``ops`` × ``dtypes``, from the cache or computed (and cached)."""
        pairs = sorted({f"{o}|{d}" for o in ops for d in dtypes})
        digest = _digest()
        path = Path(cache_dir) / f"spyre_support-{digest}.json" if cache_dir and digest else None
        if path is not None and path.exists():
            try:
                data = json.loads(path.read_text())
                known = set(data["known"])
                if known.issuperset(pairs):
                    dt = tuple(data["dtypes"]) if data["dtypes"] is not None else None
                    return cls(dt, data["reasons"], known)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("ignoring unreadable support cache %s: %s", path, exc)
        answers = cls.compute(pairs)
        if path is not None and answers.dtypes is not None:
            write_atomic(path, json.dumps({"dtypes": list(answers.dtypes),
                                           "reasons": answers.reasons,
                                           "known": sorted(answers.known)}, sort_keys=True))
        return answers

    @classmethod
    def compute(cls, pairs: Iterable[str]) -> SupportAnswers:
        """Ask ``spyre_backend.support`` (imports torch); no table: no dtype rule, no reasons."""
        try:
            from spyre_backend.support import SUPPORTED_DTYPES, unsupported_reason
        except Exception as exc:  # noqa: BLE001 — no table means no dtype rule, not an error
            log.warning("spyre support table unavailable (%s); no dtype rule applied", exc)
            return cls(None, {}, set())
        reasons: dict[str, str] = {}
        known = set(pairs)
        for pair in known:
            op, dtype = pair.split("|", 1)
            why = unsupported_reason(op, dtype)
            if why:
                reasons[pair] = why
        return cls(tuple(SUPPORTED_DTYPES), reasons, known)

    def unsupported_reason(self, op: str, dtype: str) -> str | None:
        """As ``spyre_backend.support.unsupported_reason``."""
        pair = f"{op}|{dtype}"
        if pair in self.known:
            return self.reasons.get(pair)
        from spyre_backend.support import unsupported_reason

        return unsupported_reason(op, dtype)
