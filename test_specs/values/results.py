"""``TestResult``: the outcome of one executed spec item, as the runner reports it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Outcome = Literal["passed", "failed", "xfailed", "xpassed", "skipped", "flaky", "crashed", "timed_out"]
OUTCOMES: tuple[str, ...] = ("passed", "failed", "xfailed", "xpassed", "skipped", "flaky", "crashed", "timed_out")
#: Outcomes that make a run fail: a test failure, or the runner crashing / timing out on it.
#: The one definition; ``relay.domain.outcomes`` builds the run-level rules on it.
BAD_OUTCOMES: frozenset[str] = frozenset({"failed", "crashed", "timed_out"})
#: Bad outcomes that say nothing about the code under test (PyTorch CI: infra failures).
INFRA_OUTCOMES: frozenset[str] = frozenset({"crashed", "timed_out"})
#: Outcomes of a test that ran and passed (``flaky``: failed first, then passed on a rerun).
PASSING_OUTCOMES: frozenset[str] = frozenset({"passed", "flaky"})


class TestResult(BaseModel):
    """One executed item: ``outcome`` after reruns, ``duration_ms`` of the last attempt.

    ``attempts`` counts executions (1 + reruns).  ``flaky`` means it failed and then passed on a
    rerun (PyTorch CI's convention).  ``message`` holds the first line of the failure, if any;
    ``detail`` the failure output (crash message and traceback lines) of a failed, crashed or
    timed-out test, unbounded here (``relay.domain.results`` bounds what a run stores).
    ``not_rerun`` says why a failure was not rerun (a deterministic device refusal,
    ``test_specs.values.refusals``); ``None`` for every other result.
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
    detail: str | None = None
    not_rerun: str | None = None
