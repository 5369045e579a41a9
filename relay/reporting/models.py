"""The body of ``POST {HUD}/api/crcr/results`` (CRCR ``utils/hud.py``, ``tests/test_hud.py``;
design §6), as the relay sends it and as its own dashboard ingest reads it::

    {"trusted": {"ci_metrics": {"queue_time": <s|null>, "execution_time": <s|null>},
                 "verified_repo": "org/repo", "downstream_repo_level": "L2"},
     "untrusted": {"callback_payload": <the callback body, verbatim>},
     "relay": {...}}                                   # ours; HUD ignores it

``trusted`` is what the relay measured or verified itself: times in **seconds** (3 decimals,
never negative, ``null`` when unknown), the repo the caller proved to be, its allowlist level.
``untrusted.callback_payload`` is the downstream's callback body exactly as received (CRCR
replaces only ``workflow.triage_verdict`` by its validated form, or removes it), so it is
validated loosely here: ``delivery_id`` and ``workflow.{status, run_id, name}`` are required
(they key the stored job), everything else is kept as sent.  ``relay`` carries our extras —
``failed_tests`` (≤ 1,000 ids), regression ``verdicts`` / ``new_tests`` / ``culprit`` — never
inside the verbatim payload.  The whole body is at most 2 MB.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["HUD_BODY_CAP", "MAX_FAILED_TESTS", "Level", "CiMetrics", "Trusted", "TestCounts",
           "Workflow", "CallbackPayload", "Untrusted", "RelayExtras", "HudBody", "seconds"]

HUD_BODY_CAP = 2 * 1024 * 1024  # bytes
MAX_FAILED_TESTS = 1000

Level = Literal["L1", "L2", "L3", "L4"]


def seconds(ms: float | None) -> float | None:
    """Milliseconds as CRCR's seconds: 3 decimals, negatives clamped to 0, ``None`` kept."""
    return None if ms is None else round(max(0.0, ms) / 1000.0, 3)


class CiMetrics(BaseModel):
    """Times the relay measured, in seconds: ``queue_time`` (dispatch → the run's first job
    started) and ``execution_time`` (a job's in_progress → completed)."""

    model_config = ConfigDict(extra="allow")
    queue_time: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    execution_time: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class Trusted(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ci_metrics: CiMetrics
    verified_repo: str = Field(min_length=1, max_length=200)
    downstream_repo_level: Level


class TestCounts(BaseModel):
    __test__ = False
    model_config = ConfigDict(extra="forbid")
    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    skipped: int = Field(ge=0)


class Workflow(BaseModel):
    """A callback's ``workflow``: ``status``, ``run_id``, ``name`` required; the rest kept."""

    model_config = ConfigDict(extra="allow")
    status: Literal["in_progress", "completed"]
    # bounds follow the hud_results columns (run_id varchar(100), job_name varchar(200), attempt
    # a 32-bit integer), so a shape that validates also stores, on SQLite and PostgreSQL alike
    run_id: int | str = Field(union_mode="left_to_right")
    name: str = Field(min_length=1, max_length=200)
    run_attempt: int = Field(default=1, ge=1, le=2**31 - 1)
    job_name: str | None = Field(default=None, max_length=200)
    conclusion: str | None = Field(default=None, max_length=30)

    @field_validator("run_id")
    @classmethod
    def _run_id_fits(cls, v: int | str) -> int | str:
        if len(str(v)) > 100:
            raise ValueError("run_id longer than 100 characters")
        return v


class CallbackPayload(BaseModel):
    """The callback body as the downstream sent it (extra keys kept)."""

    model_config = ConfigDict(extra="allow")
    event_type: str | None = Field(default=None, max_length=100)
    delivery_id: str = Field(min_length=1, max_length=100)
    workflow: Workflow


class Untrusted(BaseModel):
    model_config = ConfigDict(extra="forbid")
    callback_payload: CallbackPayload


class RelayExtras(BaseModel):
    """Our additions, outside the verbatim payload: failed test ids and regression data."""

    model_config = ConfigDict(extra="allow")
    failed_tests: list[str] = Field(default_factory=list, max_length=MAX_FAILED_TESTS)


class HudBody(BaseModel):
    """``{"trusted": {...}, "untrusted": {"callback_payload": {...}}, "relay": {...}?}``."""

    model_config = ConfigDict(extra="forbid")
    trusted: Trusted
    untrusted: Untrusted
    relay: RelayExtras | None = None
