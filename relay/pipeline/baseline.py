"""The baseline half of a run: base results reused from the store or computed, then verdicts for
the head results (``relay.domain.verdicts``).

A regression run (head and base environments): the baseline of a change is the same backend +
specs + selection executed on the change's base in the base environment.  Stored results of
runs whose head is that base (same environment name, same backend) are reused per test
(``reuse``, at planning time); only the missing tests are executed, and those results are stored
as a run of their own (trigger ``baseline``, ``baseline_run``) so the next change on the same
base reuses them too.

A run without environments (no ``RELAY_COMMIT_ENV``, no ``--head-env``) is compared with trunk
(``trunk_baseline``, at planning time; ``relay.domain.baseline`` lists the kinds): trunk at the
change's base when a trunk run of it ran the same items, else the newest trunk runs that did;
a failure there the same way is BROKEN_TRUNK naming that run, a failure there that passes now
is FIXED.  A trunk run with nothing to compare with establishes the trunk baseline.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from relay.domain.baseline import TRUNK_KINDS, Baseline, TrunkFound, summary
from relay.domain.outcomes import BAD_OUTCOMES
from relay.domain.run import Run
from relay.domain.verdicts import Verdict, classify_all
from relay.envs.environments import Environment, describe
from relay.pipeline.ports import RunStore
from selection.models import ChangeSet, StageStats
from test_specs.values.results import TestResult

__all__ = ["reuse", "baseline_run", "verdicts_for", "trunk_baseline", "trunk_verdicts", "UNSEEN"]

#: the NEW reason of a failure that no trunk run of the same item saw, per baseline kind
UNSEEN = {"establishes": "fails; first trunk run of this test (this run establishes the trunk baseline)",
          "none": "fails; no trunk run of this test to compare with",
          **{k: "fails; no trunk run of this item (same test id and mode) to compare with" for k in TRUNK_KINDS}}


def reuse(store: RunStore, ids: Sequence[str], *, ref: str, env_name: str,
          backend: str) -> tuple[dict[str, TestResult], list[str]]:
    """Stored base results for ``ids`` (newest run first wins) and the ids of the runs used."""
    found: dict[str, TestResult] = {}
    used: list[str] = []
    for run in store.baseline_runs(ref=ref, env_name=env_name, backend=backend):
        wanted = set(ids) - set(found)
        if not wanted:
            break
        hits = {r.id: r for r in run.results if r.id in wanted}
        if hits:
            found.update(hits)
            used.append(run.id)
    return found, used


def baseline_run(changeset: ChangeSet, results: Sequence[TestResult], *, backend: str,
                 environment: Environment, started_at: datetime,
                 stages: Sequence[StageStats] = ()) -> Run:
    """The run holding base results computed for ``changeset`` (trigger ``baseline``; head =
    the change's base, so later changes on that base find it)."""
    return Run(id=uuid.uuid4().hex[:16], backend=backend, upstream=changeset.upstream,
               base=changeset.base, head=changeset.base, title=f"baseline for {changeset.head}",
               trigger="baseline", started_at=started_at, finished_at=datetime.now(UTC),
               selected=len(results), conclusion=Run.conclude(list(results)), stages=list(stages),
               results=list(results), counts=Run.count_outcomes(list(results)),
               environments={"head": describe(environment)})


def verdicts_for(head: Sequence[TestResult], base: dict[str, TestResult], store: RunStore, *,
                 run_id: str | None = None, backend: str, env_name: str,
                 head_sha: str | None) -> list[Verdict]:
    """Verdicts of the head results against the base results, the quarantine (a quarantined
    test's failure is FLAKY, never NEW) and the trunk history of the tests that failed on every
    attempt (``RunStore.history`` for ``backend`` and the head environment ``env_name`` of commit
    ``head_sha``; ``relay.domain.flakiness``).  ``run_id`` is named as a rerun pass's evidence."""
    failed = [r.id for r in head if r.outcome == "failed"]
    trunk = store.history(failed, backend=backend, env_name=env_name, head=head_sha) if failed else {}
    quarantined = store.quarantined()
    return classify_all(head, [base[r.id] for r in head if r.id in base], trunk, quarantined,
                        run_id=run_id)


def trunk_baseline(store: RunStore, modes: dict[str, str], *, backend: str, base: str | None,
                   ref: str | None, trigger: str) -> tuple[TrunkFound, Baseline]:
    """The trunk baseline of a run without environments (see the module docstring): the trunk
    results found for ``modes`` (test id → mode it runs in) and the ``Baseline`` saying which
    (its ``failing_on_trunk`` is filled by ``trunk_verdicts`` once the run's results are in)."""
    found = store.trunk(modes, backend=backend, base=base) if modes else TrunkFound()
    trunk_run = trigger in ("webhook", "replay") and ref == store.main_ref
    main_ref = store.main_ref
    if found.runs:
        kind = "trunk_at_base" if all(h == base for _r, h in found.runs) else "newest_trunk"
        b = Baseline(kind=kind, runs=[r for r, _h in found.runs], commits=[h for _r, h in found.runs],
                     main_ref=main_ref, compared=len(found.results),
                     failing_on_trunk=sorted(i for i, r in found.results.items() if r.outcome in BAD_OUTCOMES))
    else:
        b = Baseline(kind="establishes" if trunk_run else "none", main_ref=main_ref)
    return found, b


def trunk_verdicts(head: Sequence[TestResult], trunk: dict[str, TestResult], source: dict[str, str],
                   baseline: Baseline, store: RunStore, *, run_id: str,
                   base: str | None) -> tuple[list[Verdict], Baseline]:
    """Verdicts of a run without environments against its trunk baseline (``trunk_baseline``:
    ``trunk`` test id → trunk result, ``source`` test id → the trunk run it came from): a
    failure seen there the same way is BROKEN_TRUNK, one that passed there is NEW, a trunk
    failure passing now is FIXED; the quarantine applies as for every run.  Returns the
    verdicts and the baseline with its summary (and, when the run establishes the baseline,
    its own failing tests as ``failing_on_trunk``)."""
    heads = dict(zip(baseline.runs, baseline.commits, strict=True))
    verdicts = classify_all(head, [trunk[r.id] for r in head if r.id in trunk], {},
                            store.quarantined(), run_id=run_id,
                            base_from={i: (r, heads.get(r, "")) for i, r in source.items()},
                            unseen=UNSEEN[baseline.kind], same_way=True)
    if baseline.kind == "establishes":
        baseline = baseline.model_copy(update={"failing_on_trunk": sorted(
            r.id for r in head if r.outcome in BAD_OUTCOMES)})
    return verdicts, baseline.model_copy(update={"summary": summary(baseline, base=base)})
