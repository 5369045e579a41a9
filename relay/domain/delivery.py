"""``Delivery``: one webhook delivery as the relay stored it — our own record, not GitHub's JSON —
and ``DeliveryStatus``, the states its row goes through."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["Delivery", "DeliveryStatus"]


class DeliveryStatus(StrEnum):
    """The stored state of a delivery (the ``deliveries.status`` column; the strings are the
    stored values and the ``?status=`` filter of ``GET /api/v1/deliveries``).

    ``received`` (stored, waiting for a worker or for its retry) → ``processing`` (claimed) →
    one of the final states ``processed``, ``ignored`` (not an event the relay acts on; the
    reason is the row's text) or ``failed`` (with its error); a transient failure goes back to
    ``received`` with its retry due.  ``ping`` is stored ``processed`` at once."""

    RECEIVED = "received"
    PROCESSING = "processing"
    PROCESSED = "processed"
    IGNORED = "ignored"
    FAILED = "failed"

    @property
    def final(self) -> bool:
        """Whether no worker touches the delivery again (``processed``, ``ignored``, ``failed``)."""
        return self in (DeliveryStatus.PROCESSED, DeliveryStatus.IGNORED, DeliveryStatus.FAILED)


class Delivery(BaseModel):
    """One stored webhook delivery: headers we keep plus the parsed JSON body.

    ``id`` is ``X-GitHub-Delivery`` (a GUID, identical on redelivery), ``event`` is
    ``X-GitHub-Event``, ``hook_id`` is ``X-GitHub-Hook-ID``; ``payload`` is the body as a dict;
    ``attempts`` counts the processing attempts so far (this one included once claimed).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    event: str
    action: str | None = None
    hook_id: str | None = None
    received_at: datetime
    payload: dict[str, Any]
    attempts: int = 0
