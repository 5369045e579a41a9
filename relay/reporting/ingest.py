"""Taking one HUD body into the dashboard's store: what ``POST /api/crcr/results`` does after
authentication, and what the relay's in-process sender does without any HTTP."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from sqlalchemy.orm import Session

from relay.reporting.models import HudBody
from relay.store.hud_results import store_hud_result

__all__ = ["ingest_body", "validation_errors"]


def ingest_body(session: Session, body: HudBody, raw: dict[str, Any] | None = None) -> bool:
    """Store ``body`` — as ``raw``, the JSON object received, when given (the downstream's
    payload stays verbatim) — under its job key (delivery id, verified repo, run id, attempt,
    job name) and commit; ``True`` when new, ``False`` when that job was stored before (the
    newer body kept, see ``store_hud_result``)."""
    wf = body.untrusted.callback_payload.workflow
    return store_hud_result(
        session, delivery_id=body.untrusted.callback_payload.delivery_id,
        repo=body.trusted.verified_repo, run_id=str(wf.run_id), attempt=wf.run_attempt,
        job_name=wf.job_name or "", status=wf.status, conclusion=wf.conclusion,
        body=raw if raw is not None else body.model_dump(mode="json", exclude_none=True))


def validation_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors without URLs, context or the offending input (a 422 answer's detail)."""
    return exc.errors(include_url=False, include_context=False, include_input=False)  # type: ignore[return-value]
