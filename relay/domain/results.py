"""``RunResult``: one executed test as a run keeps it — the runner's ``TestResult`` plus its
failure output, both bounded in size.

``message`` is the runner's one-line summary (``test_specs.values.results.TestResult.message``:
the first line of the failure, the crash or the skip reason).  ``detail`` is the failure output —
pytest's report of the crash and the traceback (``test_specs.reports.records.failure_output``) —
of a test that did not pass; ``RunResult.of`` carries it over, and the store,
``GET /api/v1/runs/{id}`` and the run page show it.

Bounds: ``message`` at most ``MESSAGE_MAX_CHARS`` characters (the head is kept: it is one line),
``detail`` at most ``DETAIL_MAX_CHARS`` (the tail is kept: the innermost frames and the
assertion are at the end of a Python traceback).
"""

from __future__ import annotations

from pydantic import field_validator

from test_specs.values.results import TestResult

__all__ = ["RunResult", "MESSAGE_MAX_CHARS", "DETAIL_MAX_CHARS", "bound_head", "bound_tail"]

#: characters of ``message`` kept (the runner sends ≤ 500; crash messages add a log line)
MESSAGE_MAX_CHARS = 2_000
#: characters of ``detail`` kept: about 100 lines of traceback
DETAIL_MAX_CHARS = 8_000


def bound_head(text: str | None, limit: int = MESSAGE_MAX_CHARS) -> str | None:
    """``text`` cut to its first ``limit`` characters, ending in ``…`` when cut."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def bound_tail(text: str | None, limit: int = DETAIL_MAX_CHARS) -> str | None:
    """``text`` cut to its last ``limit`` characters, starting with a ``… (N characters cut)``
    line when cut; blank text becomes ``None``."""
    if text is None or not text.strip():
        return None
    if len(text) <= limit:
        return text
    head = f"… ({len(text) - limit:,} characters cut)\n"
    return head + text[len(text) - limit + len(head):]


class RunResult(TestResult):
    """A ``TestResult`` with ``detail`` (see the module docstring); what ``Run.results`` holds."""

    detail: str | None = None

    @field_validator("message")
    @classmethod
    def _bound_message(cls, value: str | None) -> str | None:
        return bound_head(value)

    @field_validator("detail")
    @classmethod
    def _bound_detail(cls, value: str | None) -> str | None:
        return bound_tail(value)

    @classmethod
    def of(cls, result: TestResult) -> RunResult:
        """``result`` as a ``RunResult`` (itself when it is one); every field the runner's result
        carries is kept, ``detail`` included."""
        if isinstance(result, RunResult):
            return result
        return cls.model_validate(result.model_dump())
