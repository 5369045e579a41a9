"""Log lines that carry the id of the delivery they are about (Zuul's ``GithubEventLogAdapter``).

``delivery_log(logger, delivery_id)`` wraps a module logger so every line reads
``[delivery: <X-GitHub-Delivery>] …`` — from intake through processing, the pipeline, fan-out
and reporting — and one ``grep`` of the id finds a delivery's whole story.  Without an id (a
local replay) the adapter adds nothing.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

__all__ = ["DeliveryLog", "delivery_log"]


class DeliveryLog(logging.LoggerAdapter):
    """A logger adapter prefixing ``[delivery: <id>]`` and setting ``record.delivery_id``."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        delivery = (self.extra or {}).get("delivery_id")
        kwargs.setdefault("extra", {})["delivery_id"] = delivery
        return (f"[delivery: {delivery}] {msg}" if delivery else msg), kwargs


def delivery_log(logger: logging.Logger, delivery_id: str | None) -> DeliveryLog:
    """``logger`` with every line tagged with ``delivery_id`` (no tag when ``None``)."""
    return DeliveryLog(logger, {"delivery_id": delivery_id})
