"""The body of ``POST {HUD}/api/crcr/results`` (CRCR, RFC-0050; design §6).

The relay splits what it measured itself (``trusted``: CI metrics, the verified downstream
repo and its level) from what the downstream reported (``untrusted.callback_payload``: the
callback body with ``event_type``, ``delivery_id``, ``payload`` and ``workflow``).  Limits:
the whole body ≤ 2 MB, ``failed_tests`` ≤ 1,000 ids, ``event_type`` ≤ 100 characters
(GitHub's ``repository_dispatch`` limit).  Metric units are milliseconds.

``workflow`` (like ``ci_metrics``) accepts extra keys: the relay's own runs put regression
data there — ``verdicts`` (counts per class), ``new_tests`` and ``culprit`` (see
``relay.reporting.body.build_hud_body``); the rest of the shape is closed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["HUD_BODY_CAP", "MAX_FAILED_TESTS", "Level", "CiMetrics", "Trusted", "TestCounts",
           "Workflow", "CallbackPayload", "Untrusted", "HudBody"]

HUD_BODY_CAP = 2 * 1024 * 1024  # bytes
MAX_FAILED_TESTS = 1000

Level = Literal["L1", "L2", "L3", "L4"]


class CiMetrics(BaseModel):
    """Times the relay measured: queue (delivery received → run started) and execution, in ms."""

    model_config = ConfigDict(extra="allow")
    queue_time_ms: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    execution_time_ms: float | None = Field(default=None, ge=0, allow_inf_nan=False)


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
    """CRCR callback ``workflow``: required status/run_id/name; the rest optional."""

    model_config = ConfigDict(extra="allow")
    status: Literal["in_progress", "completed"]
    # bounds follow the hud_results columns (run_id varchar(100), job_name varchar(200), attempt
    # a 32-bit integer), so a shape that validates also stores, on SQLite and PostgreSQL alike
    run_id: int | str = Field(union_mode="left_to_right")

    @field_validator("run_id")
    @classmethod
    def _run_id_fits(cls, v: int | str) -> int | str:
        if len(str(v)) > 100:
            raise ValueError("run_id longer than 100 characters")
        return v
    name: str = Field(min_length=1, max_length=200)
    run_attempt: int = Field(default=1, ge=1, le=2**31 - 1)
    job_name: str | None = Field(default=None, max_length=200)
    conclusion: str | None = Field(default=None, max_length=30)
    test_results: TestCounts | None = None
    failed_tests: list[str] = Field(default_factory=list, max_length=MAX_FAILED_TESTS)
    artifact_url: str | None = None


class CallbackPayload(BaseModel):
    model_config = ConfigDict(extra="forbid")
    event_type: str = Field(min_length=1, max_length=100)
    delivery_id: str = Field(min_length=1, max_length=100)
    payload: dict[str, Any]
    workflow: Workflow


class Untrusted(BaseModel):
    model_config = ConfigDict(extra="forbid")
    callback_payload: CallbackPayload


class HudBody(BaseModel):
    """``{"trusted": {...}, "untrusted": {"callback_payload": {...}}}``."""

    model_config = ConfigDict(extra="forbid")
    trusted: Trusted
    untrusted: Untrusted
