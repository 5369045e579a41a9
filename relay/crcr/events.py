"""What the relay does with one processed upstream delivery, per event (Zuul's
``GithubEventProcessor`` habit: a dict of small functions picked by the event name).

Called once per claimed delivery (``relay.worker.delivery.DeliveryWork``) after
``relay.github.webhooks.ignored_reason`` let it through (upstream repository, an action CRCR
acts on):

``pull_request``  opened / reopened / synchronize / closed → fan-out (``relay.crcr.fanout``);
                  ``labeled`` with ``ciflow/crcr/<device>`` → that device's L3 check runs
                  (``relay.crcr.checks.on_labeled``) — never a dispatch
``push``          fan-out
``check_run``     ``rerequested`` → re-run the downstream run (``relay.crcr.reruns``)
``check_suite``   ``rerequested`` → re-run each distinct downstream run of the suite

Each returns a short note for the log; errors propagate (GitHub failures of a rerun are the
delivery's failure, retried when transient).
"""

from __future__ import annotations

from collections.abc import Callable

from relay.crcr.checks import on_labeled
from relay.crcr.fanout import FanoutContext, fan_out
from relay.crcr.reruns import rerun_check_run, rerun_check_suite
from relay.domain.delivery import Delivery

__all__ = ["EVENT_HANDLERS", "RERUN_EVENTS", "handle_upstream", "rerun_requested"]

Handler = Callable[[Delivery, FanoutContext], str]
RERUN_EVENTS = frozenset({"check_run", "check_suite"})


def _pull_request(delivery: Delivery, ctx: FanoutContext) -> str:
    if delivery.payload.get("action") == "labeled":
        queued = on_labeled(delivery, ctx.session_factory)
        return f"label: {queued} check sync(s) queued"
    sent = fan_out(delivery, ctx)
    return f"dispatched to {sum(v == 'sent' for v in sent.values())} of {len(sent)}"


def _push(delivery: Delivery, ctx: FanoutContext) -> str:
    sent = fan_out(delivery, ctx)
    return f"dispatched to {sum(v == 'sent' for v in sent.values())} of {len(sent)}"


def rerun_requested(delivery: Delivery, ctx: FanoutContext) -> str:
    """Re-run what a rerequested crcr check run / check suite points at; raises
    ``GitHubAPIError`` when a single check run's rerun is refused."""
    rerun = rerun_check_run if delivery.event == "check_run" else rerun_check_suite
    done = rerun(delivery.payload, ctx.allowlist(), ctx.github)
    return "rerun: " + (", ".join(f"{repo} run {run}" for repo, run in done) or "nothing")


EVENT_HANDLERS: dict[str, Handler] = {"pull_request": _pull_request, "push": _push}


def handle_upstream(delivery: Delivery, ctx: FanoutContext) -> str | None:
    """The fan-out part of ``delivery`` (dispatches, label checks); ``None`` for events that
    have none (re-runs run as the delivery's work: ``rerun_requested``)."""
    handler = EVENT_HANDLERS.get(delivery.event)
    return handler(delivery, ctx) if handler is not None else None
