"""The GitHub and CRCR vocabulary shared by intake, fan-out, check runs, re-runs and local runs —
defined once, here.

Sources: GitHub docs, "Webhook events and payloads" (event names, actions, the forty-zero sha of
a created or deleted ref); CRCR (pytorch/test-infra ``aws/lambda/cross_repo_ci_relay/``:
``webhook/event_handler.py`` ``_PULL_REQUEST_ALLOW_ACTIONS``, the ``ciflow/crcr/<device>`` label
of L3 check runs, ``utils/misc.py`` ``extract_pr_context`` for ``ciflow/trunk/<pr>`` tags).
"""

from __future__ import annotations

__all__ = [
    "ZERO_SHA",
    "CRCR_LABEL_PREFIX",
    "CIFLOW_TRUNK_PREFIX",
    "PR_NUMBER_MAX",
    "HANDLED_EVENTS",
    "PR_DISPATCH_ACTIONS",
    "PR_ACTIONS",
    "PR_RUN_ACTIONS",
    "RERUN_EVENTS",
    "EVENT_ACTIONS",
    "FAILING_CONCLUSIONS",
]

#: ``before`` / ``after`` of a push that creates / deletes a ref (GitHub: forty zeros)
ZERO_SHA = "0" * 40
#: the label prefix whose ``labeled`` events start L3 check runs (``ciflow/crcr/<device>``; CRCR)
CRCR_LABEL_PREFIX = "ciflow/crcr/"
#: pushes of these tags are a PR's trunk CI (``ciflow/trunk/<pr>``); other pushes have no PR
CIFLOW_TRUNK_PREFIX = "refs/tags/ciflow/trunk/"
#: PR numbers are stored in 32-bit integer columns (dispatches, jobs, check runs)
PR_NUMBER_MAX = 2**31 - 1

#: Events the relay processes; others are recorded as ``ignored`` (design §5).
HANDLED_EVENTS = frozenset({"pull_request", "push", "check_run", "check_suite", "ping"})
#: ``pull_request`` actions dispatched downstream (CRCR ``_PULL_REQUEST_ALLOW_ACTIONS``).
PR_DISPATCH_ACTIONS = frozenset({"opened", "reopened", "synchronize", "closed"})
#: ``pull_request`` actions handled: the dispatched ones, and ``labeled`` with a ``ciflow/crcr/``
#: label (it only starts the L3 check runs of that device; CRCR).
PR_ACTIONS = PR_DISPATCH_ACTIONS | {"labeled"}
#: ``pull_request`` actions on which the local backend runs the pipeline (a new head).
PR_RUN_ACTIONS = frozenset({"opened", "reopened", "synchronize"})
#: events whose ``rerequested`` action re-runs downstream runs (CRCR, newer than RFC-0050)
RERUN_EVENTS = frozenset({"check_run", "check_suite"})
#: event → the actions handled (``None``: every action).  Anything else is stored ``ignored``.
EVENT_ACTIONS: dict[str, frozenset[str] | None] = {
    "pull_request": PR_ACTIONS,
    "push": None,
    "check_run": frozenset({"rerequested"}),
    "check_suite": frozenset({"rerequested"}),
    "ping": None,
}
#: downstream job conclusions that count as failing (a PR comment per repo; CRCR)
FAILING_CONCLUSIONS = ("failure", "timed_out", "cancelled", "startup_failure")
