"""Runs: the listing (``GET /api/v1/dashboard``), one run (``GET /api/v1/runs/{id}``) and the
run page's view of the same ``Run`` (``GET /runs/{id}``).

The page's numbers are the JSON's: ``counts`` per outcome (they add up to ``selected``, the tests
run), the selection's modes (``skip`` tests were selected but not run), the verdicts per class.
Times are milliseconds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy.orm import Session

from relay.domain.outcomes import BAD_OUTCOMES
from relay.domain.run import Run
from relay.service.queries.common import OUTCOME_ORDER, VERDICT_ORDER, cell_conclusion, github_links
from relay.store import list_runs, load_run
from relay.store.grid import spec_group

__all__ = ["LISTED", "dashboard_json", "run_json", "run_view", "drci_summary", "RESULTS_SHOWN"]

#: what run listings leave out (the full lists are on ``/runs/{id}``)
LISTED = {"results", "verdicts", "selection"}
#: results (and selection rows) a run page lists before saying how many more match
RESULTS_SHOWN = 500
#: Dr. CI's headings per verdict class (singular, plural)
_DRCI = {"NEW": ("New Failure", "New Failures"), "INFRA": ("Infra Failure", "Infra Failures"),
         "FLAKY": ("Flaky", "Flaky"), "BROKEN_TRUNK": ("Broken Trunk", "Broken Trunk"),
         "FIXED": ("Fixed", "Fixed")}


def dashboard_json(session: Session, limit: int) -> dict[str, Any]:
    """``{"runs": [Run JSON without results, verdicts and selection]}``, newest first."""
    return {"runs": [r.model_dump(mode="json", exclude=LISTED) for r in list_runs(session, limit)]}


def run_json(session: Session, run_id: str) -> dict[str, Any]:
    """The full Run JSON; raises ``RunNotFound``."""
    return load_run(session, run_id).model_dump(mode="json")


def drci_summary(run: Run) -> dict[str, Any]:
    """Dr. CI's comment head for ``run``: ``{"ok", "headline", "sections": [{"kind", "title",
    "verdicts"}]}`` — NEW, INFRA, FLAKY, BROKEN_TRUNK, FIXED listed test by test.  Without
    verdicts (no baseline), the bad results are counted as failures."""
    if not run.verdicts:
        bad = sum(run.counts.get(o, 0) for o in BAD_OUTCOMES)
        return {"ok": bad == 0, "headline": f"{bad} Failure{'s' * (bad != 1)}" if bad else "No Failures",
                "sections": []}
    by_kind: dict[str, list[Any]] = {}
    for v in run.verdicts:
        by_kind.setdefault(v.verdict, []).append(v)
    parts, sections = [], []
    for kind in VERDICT_ORDER:
        if kind in _DRCI and by_kind.get(kind):
            n = len(by_kind[kind])
            title = _DRCI[kind][n != 1]
            parts.append(f"{n} {title}")
            sections.append({"kind": kind, "title": title, "verdicts": by_kind[kind]})
    new = bool(by_kind.get("NEW"))
    return {"ok": not new, "headline": ", ".join(parts) if parts else "No Failures", "sections": sections}


def _groups(run: Run, verdict_of: dict[str, str]) -> list[dict[str, Any]]:
    """Per spec group: outcomes, verdicts and the group's conclusion (the grid's cells)."""
    outcomes: dict[str, Counter[str]] = {}
    verdicts: dict[str, Counter[str]] = {}
    for r in run.results:
        outcomes.setdefault(spec_group(r.id), Counter())[r.outcome] += 1
        if r.id in verdict_of:
            verdicts.setdefault(spec_group(r.id), Counter())[verdict_of[r.id]] += 1
    return [{"name": g, "counts": dict(c), "tests": sum(c.values()),
             "conclusion": cell_conclusion(dict(c), dict(verdicts.get(g, {})) or None)}
            for g, c in sorted(outcomes.items())]


def _matches(r: Any, verdict: str | None, *, test: str | None, op: str | None, want: str | None,
             outcome: str | None) -> bool:
    return ((not test or test.lower() in r.id.lower() or test.lower() in r.upstream.lower())
            and (not op or r.op == op) and (not want or verdict == want)
            and (not outcome or r.outcome == outcome))


def _timings(run: Run) -> dict[str, float]:
    """Wall time of the run, of the selection stages, of everything else (environments, test
    execution, storing), and the tests' own summed durations."""
    wall = max(0.0, (run.finished_at - run.started_at).total_seconds() * 1000.0)
    stages = sum(s.ms for s in run.stages)
    return {"wall_ms": wall, "stages_ms": stages, "other_ms": max(0.0, wall - stages),
            "tests_ms": sum(r.duration_ms for r in run.results)}


def run_view(session: Session, run_id: str, *, test: str | None = None, op: str | None = None,
             verdict: str | None = None, outcome: str | None = None) -> dict[str, Any]:
    """Everything the run page shows (see the module docstring); ``test`` (substring of the id
    or upstream name), ``op``, ``verdict`` and ``outcome`` filter the listed failures, results
    and selection rows (``failures_total``: the failures of the whole run), never the counts.
    Raises ``RunNotFound``."""
    run = load_run(session, run_id)
    verdict_of = {v.id: v.verdict for v in run.verdicts}
    reasons = {v.id: v.reason for v in run.verdicts}
    outcome_of = {r.id: r.outcome for r in run.results}
    shown = [r for r in run.results
             if _matches(r, verdict_of.get(r.id), test=test, op=op, want=verdict, outcome=outcome)]
    rank = {k: i for i, k in enumerate(VERDICT_ORDER)}
    # the filters (a spec group's ``test=group::`` among them) scope the failure list too
    failures = sorted((r for r in shown if r.outcome in BAD_OUTCOMES or verdict_of.get(r.id) == "NEW"),
                      key=lambda r: (rank.get(verdict_of.get(r.id, ""), 99), r.id))
    selection = [t for t in run.selection
                 if _matches(t, verdict_of.get(t.id), test=test, op=op, want=verdict,
                             outcome=None) and (not outcome or outcome_of.get(t.id) == outcome)]
    modes = Counter(t.mode for t in run.selection)
    counts = [(o, run.counts.get(o, 0)) for o in OUTCOME_ORDER]
    return {
        "run": run, "links": github_links(run.upstream, run.head, run.ref, run.base),
        "counts": counts, "counted": sum(n for _, n in counts), "modes": dict(modes),
        "skipped_by_selection": modes.get("skip", 0),
        "verdict_counts": [(k, run.verdict_counts.get(k, 0)) for k in VERDICT_ORDER if run.verdict_counts],
        "drci": drci_summary(run), "groups": _groups(run, verdict_of), "timings": _timings(run),
        "failures": [{"result": r, "verdict": verdict_of.get(r.id), "reason": reasons.get(r.id)} for r in failures],
        "failures_total": sum(1 for r in run.results if r.outcome in BAD_OUTCOMES or verdict_of.get(r.id) == "NEW"),
        "results": [{"result": r, "verdict": verdict_of.get(r.id)} for r in shown[:RESULTS_SHOWN]],
        "results_matching": len(shown),
        "selection": [{"test": t, "outcome": outcome_of.get(t.id)} for t in selection[:RESULTS_SHOWN]],
        "selection_matching": len(selection),
        "ops": sorted({r.op for r in run.results if r.op}),
        "filters": {"test": test or "", "op": op or "", "verdict": verdict or "", "outcome": outcome or ""},
    }
