"""The HUD body of a relay run: CRCR's ``POST {HUD}/api/crcr/results`` shape
(``relay.reporting.models``) filled from a ``Run``."""

from __future__ import annotations

from typing import Any

from relay.domain.outcomes import BAD_OUTCOMES, bad_results
from relay.domain.run import Run
from relay.reporting.models import MAX_FAILED_TESTS, HudBody, seconds
from relay.settings import Settings

__all__ = ["build_hud_body"]


def build_hud_body(
    run: Run,
    settings: Settings,
    *,
    level: str = "L1",
    event_type: str | None = None,
    queue_ms: float | None = None,
) -> HudBody:
    """The HUD body for ``run``.

    ``test_results``: ``failed`` = failed + crashed + timed_out, ``skipped`` = skipped,
    ``passed`` = every other outcome (passed, xfailed, xpassed, flaky).  ``event_type`` defaults
    to ``"replay"`` for replays and ``"pull_request"`` for webhook runs; ``delivery_id`` to
    ``run.delivery_id`` or ``"replay-<run id>"``.  ``queue_ms`` (milliseconds) defaults to 0 (a
    replay does not queue); the body carries seconds (CRCR).

    Our extras go in ``relay`` (never in the CRCR payload): ``failed_tests`` (at most 1,000 ids);
    a regression run adds ``verdicts`` (counts per class) and ``new_tests`` (ids of NEW verdicts,
    at most 1,000); a run with a culprit adds ``culprit`` ``{commit, tests (≤ 1,000), rounds,
    steps: [{commit, failed (count), environment}]}``.
    """
    counts = run.counts or Run.count_outcomes(run.results)
    failed = sum(counts.get(o, 0) for o in BAD_OUTCOMES)
    skipped = counts.get("skipped", 0)
    passed = sum(counts.values()) - failed - skipped
    failed_ids = [r.id for r in bad_results(run.results)][:MAX_FAILED_TESTS]
    exec_ms = max(0.0, (run.finished_at - run.started_at).total_seconds() * 1000.0)
    extra: dict[str, Any] = {"failed_tests": failed_ids}
    if run.verdict_counts:
        extra["verdicts"] = dict(run.verdict_counts)
        extra["new_tests"] = [v.id for v in run.verdicts if v.verdict == "NEW"][:MAX_FAILED_TESTS]
    if run.culprit is not None:
        extra["culprit"] = {
            "commit": run.culprit.commit, "tests": run.culprit.tests[:MAX_FAILED_TESTS],
            "rounds": run.culprit.rounds,
            "steps": [{"commit": s.commit, "failed": len(s.failed), "environment": s.environment}
                      for s in run.culprit.steps]}
    return HudBody.model_validate({
        "trusted": {
            "ci_metrics": {"queue_time": seconds(queue_ms or 0.0), "execution_time": seconds(exec_ms)},
            "verified_repo": run.backend,
            "downstream_repo_level": level,
        },
        "untrusted": {"callback_payload": {
            "event_type": event_type or ("replay" if run.trigger == "replay" else "pull_request"),
            "delivery_id": run.delivery_id or f"replay-{run.id}",
            "payload": {"base": run.base, "head": run.head, "upstream": run.upstream},
            "workflow": {
                "status": "completed",
                "conclusion": run.conclusion,
                "name": run.backend,
                "run_id": run.id,
                "run_attempt": 1,
                "test_results": {"passed": passed, "failed": failed, "skipped": skipped},
            },
        }},
        "relay": extra,
    })
