"""``Delivery``: one webhook delivery as the relay stored it — our own record, not GitHub's JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["Delivery"]


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
