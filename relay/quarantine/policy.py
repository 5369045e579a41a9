"""Flaky-test quarantine, PyTorch HUD style: propose disabling tests that are flaky on the
upstream main branch, and propose re-enabling them once they have been green long enough.

Rules (PyTorch HUD's disable-flaky-tests bot, thresholds from ``Settings``):

* **disable** — a test flaky in *more than* ``quarantine_flaky_runs`` (2) main-branch runs
  started within ``quarantine_window_h`` (6 h) before ``now`` gets a ``quarantine`` row (state
  ``disabled``) and an open issue titled exactly ``DISABLED <test id>`` in
  ``quarantine_repo`` (body: ``Platforms: <backend>`` first, as PyTorch's disable issues, then
  the runs).  An open issue with that exact title is adopted instead of filing another; with no
  repo configured only the row is written and its ``reason`` says so.  "Flaky in a run" means
  outcome ``flaky`` (failed, then passed on a rerun) or a stored ``FLAKY`` verdict of a rule that
  is evidence of its own (a rerun pass or trunk flips, ``relay.store.quarantine.EVIDENCE_RULES``;
  not a quarantine FLAKY, which would keep a test disabled by its own record).  The row keeps the
  run ids, and a quarantined test's FLAKY verdict names them.
  Main-branch runs: ``relay.store.quarantine`` (ref = ``quarantine_main_ref``, trigger webhook
  or replay, not a pull-request run).
* **re-enable** — a disabled test whose consecutive ``passed`` results in main-branch runs,
  counted back from the newest to its newest non-green one, number at least
  ``quarantine_reenable_greens`` (150) and span (oldest to newest green run) at least
  ``quarantine_reenable_days`` (7 d) moves to ``reenable_proposed``, and its issue gets one
  comment proposing to close it (found again by a hidden marker, so never posted twice).

* **release** — as in PyTorch, closing the ``DISABLED`` issue ends the quarantine: a row whose
  issue GitHub reports ``closed`` is deleted (listed in ``report.released``), so the test counts
  as NEW again when it fails, and a later flaky streak files a new issue.

The row is claimed (UNIQUE test id, committed) before the issue is filed, so two evaluations
racing on one test file one issue; a row whose issue could not be filed (GitHub down) is retried
by later evaluations once ``RETRY_AFTER`` has passed since it was claimed.  GitHub errors are
collected in the report, never raised; the test stays quarantined either way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.errors import GitHubAPIError
from relay.github.client import GitHubClient
from relay.settings import Settings
from relay.store.quarantine import (
    FlakyRun,
    QuarantineRecord,
    as_utc,
    claim,
    disabled_title,
    flaky_runs,
    green_streaks,
    load_quarantine,
)

__all__ = ["Proposal", "QuarantineReport", "evaluate", "evaluate_safely", "issue_body",
           "REENABLE_MARKER", "RETRY_AFTER"]

log = logging.getLogger(__name__)

#: hidden marker of the re-enable comment (``relay.github.checks.upsert_marked_comment``)
REENABLE_MARKER = "<!-- spyre-relay:quarantine-reenable -->"
#: a disabled row without its issue is left this long to the evaluation that claimed it
RETRY_AFTER = timedelta(minutes=5)
_RUNS_LISTED = 20


class Proposal(BaseModel):
    """One proposal: ``disable`` (with the flaky runs counted) or ``reenable`` (with the
    greens counted and the days they span); the issue is ``None`` when none was filed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: Literal["disable", "reenable"]
    test_id: str
    reason: str
    flaky_runs: int = 0
    greens: int = 0
    green_days: float = 0.0
    issue_repo: str | None = None
    issue_number: int | None = None
    issue_url: str | None = None
    issue_adopted: bool = False  # an open issue with the exact title already existed


class QuarantineReport(BaseModel):
    """What one ``evaluate`` proposed (``disabled``, ``reenabled``), the thresholds it used,
    and the GitHub errors it met (``errors``: one line each; retried by later evaluations)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evaluated_at: datetime
    main_ref: str
    window_h: float
    flaky_runs_threshold: int
    reenable_greens: int
    reenable_days: float
    repo: str | None
    disabled: list[Proposal] = Field(default_factory=list)
    reenabled: list[Proposal] = Field(default_factory=list)
    released: list[str] = Field(default_factory=list)  # tests whose DISABLED issue was closed
    quarantined: int = 0  # rows in the quarantine table after this evaluation
    errors: list[str] = Field(default_factory=list)


def issue_body(test_id: str, runs: Sequence[FlakyRun], settings: Settings) -> str:
    """The body of a ``DISABLED <test id>`` issue: ``Platforms: <backend>`` on the first line
    (PyTorch's disable issues list platforms there), why, and up to 20 of the flaky runs."""
    lines = [f"Platforms: {settings.backend}", "",
             f"This test was disabled because it was flaky on `{settings.quarantine_main_ref}` of "
             f"{settings.upstream_repo}: flaky (failed, then passed on a rerun, or the same failure "
             f"flipped on trunk runs of one commit) in {len(runs)} runs within "
             f"{settings.quarantine_window_h:g} h, more than "
             f"the {settings.quarantine_flaky_runs} allowed.", "",
             "| run | upstream head | started (UTC) |", "|---|---|---|"]
    lines += [f"| `{r.run_id}` | `{r.head[:12]}` | {r.started_at:%Y-%m-%d %H:%M} |"
              for r in runs[-_RUNS_LISTED:]]
    lines += ["", f"Test id: `{test_id}`", "",
              f"Re-enabling is proposed here after {settings.quarantine_reenable_greens} "
              f"consecutive green runs spanning at least {settings.quarantine_reenable_days:g} "
              f"days; until then a failure of the test is a FLAKY verdict, never NEW."]
    return "\n".join(lines)


def _reenable_comment(record: QuarantineRecord, greens: int, days: float) -> str:
    return (f"{REENABLE_MARKER}\nProposing to re-enable `{record.test_id}`: {greens} consecutive "
            f"green runs on the main branch over {days:.1f} days since its last failure or flake. "
            f"Close this issue to re-enable the test.")


def _file_issue(record: QuarantineRecord, runs: Sequence[FlakyRun], settings: Settings,
                github: GitHubClient) -> bool:
    """Find-or-file the record's issue and store it on the row; True when it was adopted."""
    assert settings.quarantine_repo is not None
    issue, created = github.ensure_issue(settings.quarantine_repo, disabled_title(record.test_id),
                                         issue_body(record.test_id, runs, settings))
    record.issue_repo = settings.quarantine_repo
    record.issue_number = int(issue["number"])
    record.issue_url = issue.get("html_url")
    record.reason = record.reason.split("; no issue", 1)[0]
    return not created


def _disable(session: Session, settings: Settings, github: Callable[[], GitHubClient],
             now: datetime, errors: list[str]) -> list[Proposal]:
    since = now - timedelta(hours=settings.quarantine_window_h)
    flaky = flaky_runs(session, main_ref=settings.quarantine_main_ref, since=since, until=now)
    known = set(session.scalars(select(QuarantineRecord.test_id)))
    proposals: list[Proposal] = []
    for test_id, runs in sorted(flaky.items()):
        if len(runs) <= settings.quarantine_flaky_runs or test_id in known:
            continue
        reason = (f"flaky in {len(runs)} main-branch runs within {settings.quarantine_window_h:g} h"
                  f" (more than {settings.quarantine_flaky_runs})")
        if settings.quarantine_repo is None:
            reason += "; no issue filed: RELAY_QUARANTINE_REPO is not set (record only)"
        record = QuarantineRecord(test_id=test_id, state="disabled", reason=reason,
                                  flaky_runs=len(runs), disabled_at=now, greens=0,
                                  flaky_run_ids=[r.run_id for r in runs])
        if not claim(session, record):
            continue  # another evaluation claimed it first and files the issue
        adopted = False
        if settings.quarantine_repo is not None:
            try:
                adopted = _file_issue(record, runs, settings, github())
                session.commit()
            except GitHubAPIError as exc:
                session.rollback()
                errors.append(f"{disabled_title(test_id)}: {exc}")
                log.warning("quarantine: filing %s failed: %s", disabled_title(test_id), exc)
        proposals.append(_proposal("disable", record, adopted=adopted))
    return proposals


def _retry_issues(session: Session, settings: Settings, github: Callable[[], GitHubClient],
                  now: datetime, errors: list[str]) -> None:
    """File the issues of rows that have none yet (GitHub failed, or the repo was set later)."""
    if settings.quarantine_repo is None:
        return
    for record in load_quarantine(session, ("disabled",)):
        if record.issue_number is not None or as_utc(record.disabled_at) > now - RETRY_AFTER:
            continue
        until = as_utc(record.disabled_at)  # the runs that made the disable proposal
        runs = flaky_runs(session, main_ref=settings.quarantine_main_ref, until=until,
                          since=until - timedelta(hours=settings.quarantine_window_h)
                          ).get(record.test_id, [])
        try:
            _file_issue(record, runs, settings, github())
            session.commit()
        except GitHubAPIError as exc:
            session.rollback()
            errors.append(f"{disabled_title(record.test_id)}: {exc}")


def _reenable(session: Session, settings: Settings, github: Callable[[], GitHubClient],
              now: datetime, errors: list[str]) -> list[Proposal]:
    from relay.github.checks import upsert_marked_comment

    need = settings.quarantine_reenable_greens
    proposals: list[Proposal] = []
    disabled = load_quarantine(session, ("disabled",))
    streaks = green_streaks(session, [r.test_id for r in disabled],
                            main_ref=settings.quarantine_main_ref, until=now)
    for record in disabled:
        streak = streaks[record.test_id]
        days = streak.span_s / 86_400
        record.greens = streak.greens
        if streak.greens < need or days < settings.quarantine_reenable_days:
            session.commit()
            continue
        if record.issue_repo and record.issue_number is not None:
            try:
                body = _reenable_comment(record, streak.greens, days)
                upsert_marked_comment(github(), record.issue_repo, record.issue_number,
                                      REENABLE_MARKER, body)
            except GitHubAPIError as exc:
                session.commit()  # keep the green count; the comment is retried next time
                errors.append(f"re-enable comment on {record.issue_repo}#{record.issue_number}: "
                              f"{exc}")
                continue
        record.state = "reenable_proposed"
        record.reenable_proposed_at = now
        session.commit()
        proposals.append(_proposal("reenable", record, days=days))
    return proposals


def _release_closed(session: Session, github: Callable[[], GitHubClient],
                    errors: list[str]) -> list[str]:
    """Delete the rows whose issue is closed on GitHub; the released test ids."""
    released: list[str] = []
    for record in load_quarantine(session):
        if not record.issue_repo or record.issue_number is None:
            continue
        try:
            issue = github().get_issue(record.issue_repo, record.issue_number)
        except GitHubAPIError as exc:
            errors.append(f"reading {record.issue_repo}#{record.issue_number}: {exc}")
            continue
        if issue.get("state") == "closed":
            session.delete(record)
            session.commit()
            released.append(record.test_id)
            log.info("quarantine: %s released (%s#%s closed)", record.test_id,
                     record.issue_repo, record.issue_number)
    return released


def _proposal(action: str, record: QuarantineRecord, *, adopted: bool = False,
              days: float = 0.0) -> Proposal:
    reason = record.reason if action == "disable" else (
        f"{record.greens} consecutive greens over {days:.1f} days")
    return Proposal(action=action, test_id=record.test_id, reason=reason,  # type: ignore[arg-type]
                    flaky_runs=record.flaky_runs, greens=record.greens, green_days=round(days, 2),
                    issue_repo=record.issue_repo, issue_number=record.issue_number,
                    issue_url=record.issue_url, issue_adopted=adopted)


def evaluate(session: Session, settings: Settings, github: GitHubClient | None = None, *,
             now: datetime | None = None) -> QuarantineReport:
    """Run both rules against the store at ``now`` (default: the current UTC time) and return
    what was proposed.  ``github`` files issues and comments when ``settings.quarantine_repo`` is
    set; ``None`` opens a client from the settings only if GitHub is needed (closed after).
    Commits on ``session``; GitHub failures land in ``report.errors`` (never raised); database
    errors propagate.
    """
    now = (now or datetime.now(UTC)).astimezone(UTC)
    opened: list[GitHubClient] = []

    def client() -> GitHubClient:
        if github is not None:
            return github
        if not opened:
            opened.append(GitHubClient.from_settings(settings))
        return opened[0]

    errors: list[str] = []
    try:
        released = _release_closed(session, client, errors)
        disabled = _disable(session, settings, client, now, errors)
        _retry_issues(session, settings, client, now, errors)
        reenabled = _reenable(session, settings, client, now, errors)
    finally:
        for c in opened:
            c.close()
    total = len(load_quarantine(session))
    return QuarantineReport(
        evaluated_at=now, main_ref=settings.quarantine_main_ref,
        window_h=settings.quarantine_window_h, flaky_runs_threshold=settings.quarantine_flaky_runs,
        reenable_greens=settings.quarantine_reenable_greens,
        reenable_days=settings.quarantine_reenable_days, repo=settings.quarantine_repo,
        disabled=disabled, reenabled=reenabled, released=released, quarantined=total,
        errors=errors)


def evaluate_safely(session_factory: Callable[[], Session], settings: Settings
                    ) -> QuarantineReport | None:
    """``evaluate`` in a session of its own, for the webhook path: every error is logged and
    swallowed (``None``), so quarantine can never lose or fail a delivery."""
    try:
        with session_factory() as session:
            report = evaluate(session, settings)
    except Exception:  # noqa: BLE001 - quarantine is advisory; the run is stored already
        log.exception("quarantine evaluation failed")
        return None
    for p in report.disabled + report.reenabled:
        log.info("quarantine: %s proposed for %s (%s)", p.action, p.test_id,
                 p.issue_url or "no issue")
    for e in report.errors:
        log.warning("quarantine: %s", e)
    return report
