"""The callback body as the relay reads it, and the HUD body it becomes (CRCR
``callback/callback_handler.py``; shared by ``relay.crcr.callbacks`` and ``relay.crcr.nightly``).

``parse_callback`` checks the fields the relay reads — ``delivery_id``, ``workflow.status``,
``workflow.run_id`` (an integer, as a number or a string of digits), ``workflow.name``;
``run_attempt`` defaults to 1 — and keeps the rest; ``verbatim_payload`` is the body to forward
(only ``workflow.triage_verdict`` normalized or removed, ``relay.crcr.verdict``);
``hud_envelope`` wraps it with the relay's measurements (``relay.reporting.models``).
"""

from __future__ import annotations

import copy
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from relay.crcr.verdict import validate_triage_verdict
from relay.errors import CallbackInvalid
from relay.reporting.models import seconds

__all__ = ["CallbackBody", "CallbackWorkflow", "parse_callback", "verbatim_payload", "hud_envelope"]

#: a positive integer as text, ≤ 100 characters (CRCR: ``int(run_id)``; 0 is its reserved sentinel)
_Digits = Annotated[str, StringConstraints(pattern=r"^0*[1-9][0-9]*$", max_length=100)]



def _digits(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class CallbackWorkflow(BaseModel):
    model_config = ConfigDict(extra="allow")
    status: str = Field(min_length=1, max_length=100)
    run_id: _Digits
    name: str = Field(min_length=1, max_length=200)
    run_attempt: int = Field(default=1, ge=1, le=2**31 - 1)
    job_name: str | None = Field(default=None, max_length=200)
    # read leniently: kept verbatim for HUD whatever they hold; the relay's own records take
    # them only when they have the expected shape (a conclusion cut to its 30-char column)
    conclusion: Any = None
    artifact_url: Any = None
    test_results: Any = None

    @property
    def conclusion_text(self) -> str | None:
        return self.conclusion[:30] if isinstance(self.conclusion, str) and self.conclusion else None

    @property
    def artifact(self) -> str | None:
        return self.artifact_url[:2000] if isinstance(self.artifact_url, str) else None

    @property
    def counts(self) -> dict[str, int] | None:
        """``test_results`` when it maps names to non-negative integers, else ``None``."""
        tr = self.test_results
        if isinstance(tr, dict) and tr and all(isinstance(k, str) and isinstance(v, int)
                                               and not isinstance(v, bool) and v >= 0
                                               for k, v in tr.items()):
            return {k[:50]: v for k, v in list(tr.items())[:20]}
        return None

    _run_id_text = field_validator("run_id", mode="before")(lambda cls, v: _digits(v))


class CallbackBody(BaseModel):
    """The fields the relay reads (everything else is kept in the verbatim payload)."""

    model_config = ConfigDict(extra="allow")
    delivery_id: str = Field(min_length=1, max_length=100)
    event_type: str | None = Field(default=None, max_length=100)
    workflow: CallbackWorkflow


def parse_callback(data: Any) -> CallbackBody:
    """``data`` as a ``CallbackBody``; raises ``CallbackInvalid`` (400) with CRCR's message for
    a missing field, else naming the invalid one."""
    if not isinstance(data, dict):
        raise CallbackInvalid("callback body must be a JSON object")
    try:
        return CallbackBody.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in err["loc"])
        if err["type"] == "missing":
            raise CallbackInvalid(f"callback body missing required field: '{where}'") from None
        raise CallbackInvalid(f"callback body field '{where}' is invalid: {err['msg']}") from None


def verbatim_payload(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``(the body to forward, the validated verdict)``: ``data`` unchanged except
    ``workflow.triage_verdict``, replaced by its normalized form or removed when invalid."""
    workflow = data.get("workflow")
    if not isinstance(workflow, dict) or "triage_verdict" not in workflow:
        return data, None
    verdict = validate_triage_verdict(workflow["triage_verdict"])
    body = copy.copy(data)
    body["workflow"] = {k: v for k, v in workflow.items() if k != "triage_verdict"}
    if verdict is not None:
        body["workflow"]["triage_verdict"] = verdict
    return body, verdict


def hud_envelope(repo: str, level: str, payload: dict[str, Any], *, queue_ms: float | None = None,
                 exec_ms: float | None = None) -> dict[str, Any]:
    """The HUD body for a callback (``relay.reporting.models``; times given in ms, sent in s)."""
    return {"trusted": {"ci_metrics": {"queue_time": seconds(queue_ms),
                                       "execution_time": seconds(exec_ms)},
                        "verified_repo": repo, "downstream_repo_level": level},
            "untrusted": {"callback_payload": payload}}
