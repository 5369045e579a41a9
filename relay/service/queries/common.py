"""Shared pieces of the query layer: what a commit or PR links to, HUD's conclusion letters, and
the verdict / outcome vocabulary in display order.

HUD (pytorch/test-infra ``torchci``, ``getConclusionChar``) draws a job as one letter: ``O``
success, ``X`` failure, ``F`` flaky (succeeded after a failed attempt), ``?`` pending, ``Q``
queued, ``N`` neutral, ``T`` timed out; we add ``R`` for a delivery waiting for its retry.
"""

from __future__ import annotations

import re
from typing import Any

from relay.domain.outcomes import BAD_OUTCOMES, OUTCOMES
from relay.domain.verdicts import VERDICTS

__all__ = ["SHA", "is_sha", "pr_number", "github_links", "CONCLUSION_CHAR", "cell_conclusion",
           "VERDICT_ORDER", "OUTCOME_ORDER", "LEVELS"]

SHA = re.compile(r"[0-9a-fA-F]{7,64}")  # SHA-1 (40) or SHA-256 (64) object names, or a prefix
_PULL_REF = re.compile(r"^refs/pull/(\d+)/(?:head|merge)$")

#: HUD's letters (see the module docstring)
CONCLUSION_CHAR = {"success": "O", "failure": "X", "flaky": "F", "pending": "?", "queued": "Q",
                   "retrying": "R", "neutral": "N", "timed_out": "T"}
#: verdict classes, most urgent first (Dr. CI's order: new failures, then flaky, then trunk)
VERDICT_ORDER = ("NEW", "INFRA", "FLAKY", "BROKEN_TRUNK", "FIXED", "KNOWN", "OK")
VERDICT_ORDER = tuple(v for v in VERDICT_ORDER if v in VERDICTS) + tuple(v for v in VERDICTS
                                                                         if v not in VERDICT_ORDER)
#: outcomes, bad first
OUTCOME_ORDER = tuple(o for o in OUTCOMES if o in BAD_OUTCOMES) + tuple(o for o in OUTCOMES
                                                                        if o not in BAD_OUTCOMES)

#: CRCR's levels (``relay.crcr.allowlist``) as the readiness page explains them
LEVELS = {
    "L1": "Upstream events are forwarded to the repository (repository_dispatch); nothing is reported back.",
    "L2": "L1, and its results are posted to the dashboard (HUD) — visible there, not on pull requests.",
    "L3": "L2, and check runs on upstream pull requests that carry the ciflow/crcr/<device> label.",
    "L4": "L3 on every pull request: check runs always, no label needed.",
}


def is_sha(value: str | None) -> bool:
    """Whether ``value`` is a commit id (7–64 hex characters), not a version or a label."""
    return bool(value) and SHA.fullmatch(str(value)) is not None


def pr_number(ref: str | None) -> int | None:
    """The pull request number of ``refs/pull/<n>/head`` (or ``/merge``), else ``None``."""
    m = _PULL_REF.match(ref or "")
    return int(m.group(1)) if m else None


def github_links(upstream: str, head: str | None, ref: str | None = None,
                 base: str | None = None) -> dict[str, Any]:
    """GitHub URLs of a change on ``upstream`` (``org/repo``): ``commit`` (head), ``base``,
    ``compare`` (base...head), ``pr`` and ``pr_number`` — ``None`` where the value is not a
    commit or the ref not a pull request."""
    root = f"https://github.com/{upstream}" if re.fullmatch(r"[\w.-]+/[\w.-]+", upstream or "") else None
    number = pr_number(ref)
    both = root and is_sha(head) and is_sha(base)
    return {"commit": f"{root}/commit/{head}" if root and is_sha(head) else None,
            "base": f"{root}/commit/{base}" if root and is_sha(base) else None,
            "compare": f"{root}/compare/{base}...{head}" if both else None,
            "pr": f"{root}/pull/{number}" if root and number is not None else None,
            "pr_number": number}


def cell_conclusion(outcomes: dict[str, int], verdicts: dict[str, int] | None) -> str:
    """The conclusion of a set of results (a spec group of a run): with verdicts, ``failure``
    iff a test is NEW (``relay.domain.verdicts.conclusion``); without, iff a result is bad;
    else ``flaky`` when a test was flaky, ``neutral`` when nothing ran, ``success``."""
    if verdicts:
        if verdicts.get("NEW"):
            return "failure"
        return "flaky" if verdicts.get("FLAKY") else "success"
    if not any(outcomes.values()):
        return "neutral"
    if any(outcomes.get(o) for o in BAD_OUTCOMES):
        return "failure"
    return "flaky" if outcomes.get("flaky") else "success"
