"""Prometheus metrics of one app instance (own registry, so several apps can coexist in tests)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from relay.github.constants import HANDLED_EVENTS

__all__ = ["Metrics", "event_label"]


def event_label(event: str | None) -> str:
    """The ``event`` label value: known event names as-is, anything else ``other`` (bounded)."""
    return event if event in HANDLED_EVENTS else "other"


class Metrics:
    """``relay_webhook_deliveries_total{event,status}`` — intake answers (accepted, duplicate,
    ignored, pong, rejected); ``relay_deliveries_processed_total{event,status}`` — processing
    outcomes (processed, failed); ``relay_hud_results_total{status}`` — ingest (stored,
    duplicate, rejected); ``relay_callbacks_total{status}`` — CRCR callbacks (in_progress,
completed, rejected, rate_limited)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.deliveries = Counter("relay_webhook_deliveries", "Webhook deliveries by answer",
                                  ["event", "status"], registry=self.registry)
        self.processed = Counter("relay_deliveries_processed", "Deliveries processed",
                                 ["event", "status"], registry=self.registry)
        self.hud_results = Counter("relay_hud_results", "Dashboard ingest posts",
                                   ["status"], registry=self.registry)
        self.callbacks = Counter("relay_callbacks", "CRCR downstream callbacks",
                                 ["status"], registry=self.registry)
