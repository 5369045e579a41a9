"""What the relay does with one processed upstream delivery: ONE table, ``HANDLERS``, keyed by
the event name (Zuul's ``GithubEventProcessor`` habit: small functions picked by the event
name), whose entries take the typed event (``relay.github.events``).

Used once per claimed delivery that ``relay.github.webhooks.ignored_reason`` let through and
``relay.github.events.parse_delivery`` typed (``relay.worker.delivery.DeliveryWork``).  An
entry has up to three parts, used in this order:

``fanout``  CRCR, before anything runs locally: repository_dispatch of the verbatim payload to
            the allowlisted downstreams (``relay.crcr.fanout``), or the L3 check runs a
            ``ciflow/crcr/<device>`` label starts (``relay.crcr.checks.on_labeled``) — never a
            dispatch; its errors are the delivery's ``fan-out: …`` errors
``rerun``   CRCR re-runs as the delivery's work, in place of a local run: a rerequested crcr
            check run / suite (``relay.crcr.reruns``); raises ``GitHubAPIError`` (the delivery
            is retried when transient, else ends ``failed``)
``run``     the local backend's ``RunRequest`` (``relay.worker.run_requests``), or ``None``

==============  ==================================================  ==================  ==========================
event           fanout                                              rerun               run
==============  ==================================================  ==================  ==========================
pull_request    dispatch (opened, reopened, synchronize, closed);   —                   opened, reopened,
                label checks (labeled)                                                  synchronize
push            dispatch                                            —                   before..after
check_run       —                                                   the run it names    —
check_suite     —                                                   each distinct run   —
ping            —                                                   —                   —
==============  ==================================================  ==================  ==========================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from relay.crcr.checks import on_labeled
from relay.crcr.fanout import FanoutContext, change_facts, fan_out
from relay.crcr.reruns import rerun_check_run, rerun_check_suite
from relay.domain.delivery import Delivery
from relay.github.events import CheckRunEvent, CheckSuiteEvent, PullRequestEvent, PushEvent
from relay.pipeline.request import RunRequest
from relay.settings import Settings
from relay.worker.run_requests import pr_run_request, push_run_request

__all__ = ["EventHandler", "FanoutOutcome", "HANDLERS"]

E = TypeVar("E")


@dataclass(frozen=True)
class FanoutOutcome:
    """What a ``fanout`` did: ``dispatched`` — downstream repo → its dispatch row's final status
    (``sent``, ``failed``); ``checks_queued`` — check syncs a ``ciflow/crcr/<device>`` label
    queued in the outbox (the deliverer is woken when there are any)."""

    dispatched: Mapping[str, str] = field(default_factory=dict)
    checks_queued: int = 0


@dataclass(frozen=True)
class EventHandler(Generic[E]):
    """The parts of one event's handling (module docstring), each taking the typed event ``E``:
    ``fanout(event, delivery, ctx)`` (``delivery``: its id, name and verbatim payload),
    ``rerun(event, ctx)`` → the ``(repo, run id)`` pairs re-run, ``run(event, delivery_id,
    settings)`` → the local run or ``None``.  A part left ``None`` does nothing."""

    fanout: Callable[[E, Delivery, FanoutContext], FanoutOutcome] | None = None
    rerun: Callable[[E, FanoutContext], list[tuple[str, int]]] | None = None
    run: Callable[[E, str, Settings], RunRequest | None] | None = None


def _pull_request_fanout(event: PullRequestEvent, delivery: Delivery,
                         ctx: FanoutContext) -> FanoutOutcome:
    if event.action == "labeled":
        return FanoutOutcome(checks_queued=on_labeled(event, ctx.session_factory))
    return FanoutOutcome(dispatched=fan_out(delivery, change_facts(event), ctx))


def _push_fanout(event: PushEvent, delivery: Delivery, ctx: FanoutContext) -> FanoutOutcome:
    return FanoutOutcome(dispatched=fan_out(delivery, change_facts(event), ctx))


def _check_run_rerun(event: CheckRunEvent, ctx: FanoutContext) -> list[tuple[str, int]]:
    return rerun_check_run(event, ctx.allowlist(), ctx.github)


def _check_suite_rerun(event: CheckSuiteEvent, ctx: FanoutContext) -> list[tuple[str, int]]:
    return rerun_check_suite(event, ctx.allowlist(), ctx.github)


#: event name → its handling; the keys are ``relay.github.constants.HANDLED_EVENTS``
HANDLERS: dict[str, EventHandler[Any]] = {
    "pull_request": EventHandler[PullRequestEvent](fanout=_pull_request_fanout, run=pr_run_request),
    "push": EventHandler[PushEvent](fanout=_push_fanout, run=push_run_request),
    "check_run": EventHandler[CheckRunEvent](rerun=_check_run_rerun),
    "check_suite": EventHandler[CheckSuiteEvent](rerun=_check_suite_rerun),
    "ping": EventHandler[Any](),
}
