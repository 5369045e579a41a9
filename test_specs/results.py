"""``TestResult``: the outcome of one executed spec item, as the runner reports it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Outcome = Literal["passed", "failed", "xfailed", "xpassed", "skipped", "flaky", "crashed", "timed_out"]
OUTCOMES: tuple[str, ...] = ("passed", "failed", "xfailed", "xpassed", "skipped", "flaky", "crashed", "timed_out")


class TestResult(BaseModel):
    """One executed item: ``outcome`` after reruns, ``duration_ms`` of the last attempt.

    ``attempts`` counts executions (1 + reruns).  ``flaky`` means it failed and then passed on a
    rerun (PyTorch CI's convention).  ``message`` holds the first line of the failure, if any.
    """

    __test__ = False  # not a pytest test class
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    upstream: str
    op: str | None = None
    module: str | None = None
    dtype: str | None = None
    mode: str = "mandatory_success"
    outcome: Outcome
    duration_ms: float = 0.0
    attempts: int = 1
    message: str | None = None
