"""The main job: one upstream change through selection, execution, storage and reporting.

``run_change`` is called once per change — by ``relay replay`` and by the delivery processor for
a webhook — and does, in order:

1. expand the specs into items and build the ``Selector`` (indexes cached in the state dir);
2. stages 1–3 → a ``Selection``;
3. run the selected non-skip items on the backend in a pytest subprocess (JUnit XML under the
   run's work dir), reporting each result to ``progress`` as it finishes;
4. stage 4 — rerun failures once, relabel failed-then-passed as flaky, propose spec edits;
5. store the ``Run`` (SQLAlchemy; SQLite by default);
6. with a commit range (``commits``) and a commit → environment resolver (``commit_env``), when
   the regression verdicts hold NEW failures: bisect the range for the culprit commit
   (``relay.bisection``), store it with the run;
7. post the run to the dashboard ingest route.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from relay.models import Run, Trigger

if TYPE_CHECKING:
    from relay.environments import Environment
from relay.settings import Settings
from selection.models import ChangeSet, Selection
from selection.pipeline import Selector, refine, to_selection
from test_specs.items import SpecItem
from test_specs.results import TestResult

log = logging.getLogger(__name__)


class Progress:
    """Callbacks the pipeline makes while it works; the CLI draws a progress bar from them.

    ``phase`` is called when a phase starts; ``total`` once with the number of tests to run;
    ``result`` once per finished test (reruns included).
    """

    def phase(self, name: str) -> None: ...

    def total(self, n: int) -> None: ...

    def result(self, result: TestResult) -> None: ...


@dataclass
class RunOutcome:
    """What ``run_change`` returns: the stored ``Run`` plus the selection and stage notes."""

    run: Run
    selection: Selection
    notes: list[str] = field(default_factory=list)
    proposals: list[str] = field(default_factory=list)
    workdir: Path | None = None
    report_error: str | None = None


def default_specs() -> list[Path]:
    """The spec files bundled in ``test_specs/specs``."""
    from test_specs.expand import spec_paths_default

    return list(spec_paths_default())


class SpecsInvalid(ValueError):
    """The specs could not be loaded or expanded; the message has one ``file:line:col: ...``
    line per error."""


def load_items(spec_paths: Sequence[Path], upstream: Path | None = None) -> list[SpecItem]:
    """Every item the specs expand to (the selection universe), sorted by id; with
    ``upstream`` (a PyTorch checkout) the specs' ``path:`` entries are collected from it too.

    Raises ``SpecsInvalid`` for a missing, malformed or semantically wrong spec.
    """
    from test_specs.expand import expand
    from test_specs.loader import SpecLoadError

    missing = [str(p) for p in spec_paths if not Path(p).is_file()]
    if missing:
        raise SpecsInvalid("; ".join(f"{m}: no such spec file" for m in missing))
    try:
        return list(expand(list(spec_paths), upstream=upstream))
    except (SpecLoadError, ValueError) as exc:
        raise SpecsInvalid(str(exc)) from None


def make_executor(spec_paths: Sequence[Path], workdir: Path, device: str,
                  progress: Progress, timeout_s: int, environment: "Environment | None" = None,
                  settings: Settings | None = None, *, shards: int = 1,
                  upstream: Path | None = None) -> Callable[[Sequence[str]], list[TestResult]]:
    """An executor running item ids in a fresh pytest subprocess per call (attempt dirs),
    with the interpreter and variables of ``environment`` (default: this interpreter).

    With ``settings.broker_url`` set (``RELAY_BROKER_URL``) the ids run instead as a chord of
    shards on Celery workers (``relay.distributed.executor.CeleryExecutor``)."""
    from test_specs.runner import run_items

    if settings is not None and settings.broker_url:
        from relay.distributed.config import as_distributed
        from relay.distributed.executor import CeleryExecutor

        return CeleryExecutor(as_distributed(settings), spec_paths, device=device, timeout_s=timeout_s,
                              label=workdir.name, on_result=progress.result,
                              env=None if environment is None else environment.env,
                              python=None if environment is None else str(environment.python))

    attempt = 0
    extra = {} if environment is None else {"python": str(environment.python), "env": environment.env}

    def execute(ids: Sequence[str]) -> list[TestResult]:
        nonlocal attempt
        attempt += 1
        if not ids:
            return []
        sub = workdir / f"attempt-{attempt}"
        sub.mkdir(parents=True, exist_ok=True)
        return run_items(list(ids), list(spec_paths), workdir=sub, device=device,
                         timeout_s=timeout_s, on_result=progress.result, shards=shards,
                         upstream=upstream, **extra)

    return execute


def run_change(changeset: ChangeSet, *, settings: Settings, trigger: Trigger = "replay",
               delivery_id: str | None = None, progress: Progress | None = None,
               spec_paths: Sequence[Path] | None = None, device: str = "spyre",
               timeout_s: int = 120, report: bool = True,
               budget_minutes: float | None = None, head_env: str | None = None,
               base_env: str | None = None, shards: int = 1,
               upstream: Path | None = None, ref: str | None = None,
               commits: Sequence[str] | None = None,
               commit_env: Callable[[str], str] | None = None) -> RunOutcome:
    """Run the whole pipeline for ``changeset`` and return the stored run.

    ``shards``: concurrent pytest processes per execution.  ``upstream``: a PyTorch checkout
    for the specs' source-tree (``path:``) entries.  With ``head_env`` (and ``base_env``, default
    ``current``) the tests run in those
    environments (``relay.environments``): the baseline on the base is reused from the store or
    computed first, every test gets a verdict, and the conclusion is failure iff one is NEW.
    ``ref``: the upstream branch (``Run.ref``).  ``commits`` (oldest → newest, the last one
    being the head) with ``commit_env`` (sha → environment name): when some verdict is NEW and
    the range holds more than one commit, the range is bisected running only the NEW tests
    (``relay.bisection.find_culprit``) and the run gets its ``culprit``; a bisection that cannot
    run is logged and noted (``notes``), the run stays stored without a culprit.

    Raises ``test_specs`` loader errors for broken specs and ``EnvironmentError_`` for an
    environment that cannot be built; a failed dashboard post is logged and returned in
    ``report_error`` (the run is already stored).
    """
    from relay.store.db import create_schema, make_engine, make_session_factory, retry_locked
    from relay.store.runs import save_run

    progress = progress or Progress()
    started = datetime.now(timezone.utc)
    run_id = uuid.uuid4().hex[:16]
    workdir = (settings.state_dir / "runs" / run_id).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    specs = list(spec_paths) if spec_paths else default_specs()

    progress.phase("expanding specs")
    items = load_items(specs, upstream)
    progress.phase("building indexes")
    selector = Selector(items, profile=settings.backend, index_device=device,
                        cache_dir=settings.state_dir / "index")
    progress.phase("selecting")
    durations = None
    if budget_minutes is not None:
        from relay.store.durations import durations_from_db

        durations = durations_from_db(settings.database_url)
    state = selector.select_state(changeset, budget_minutes=budget_minutes, durations=durations)
    selection = to_selection(state)
    to_run = [t.id for t in selection.to_run]
    head = base = None
    if head_env is not None:
        from relay.environments import prepare

        progress.phase(f"preparing environments {head_env} / {base_env or 'current'}")
        head = prepare(head_env, settings.state_dir)
        base = prepare(base_env or "current", settings.state_dir)
    base_line = None
    if base is not None:
        from relay.regression import baseline

        progress.phase(f"baseline on {changeset.base} in {base.name}")
        base_line = baseline(changeset, to_run, settings=settings, base_env=base,
                             execute_base=make_executor(specs, workdir / "base", device, Progress(),
                                                        timeout_s, base, settings, shards=shards,
                                                        upstream=upstream),
                             stages=list(state.stats))
    progress.total(len(to_run))
    progress.phase("running tests")
    execute = make_executor(specs, workdir, device, progress, timeout_s, head, settings,
                            shards=shards, upstream=upstream)
    results = execute(to_run)
    progress.phase("refining")
    state = refine(state, results, execute, proposal_dir=workdir)
    final = list(state.results)
    extra: dict = {"conclusion": Run.conclude(final)}
    if base_line is not None and head is not None and base is not None:
        from relay.environments import describe
        from relay.regression import verdicts_for
        from relay.verdicts import conclusion

        verdicts = verdicts_for(final, base_line, settings=settings)
        extra = {"conclusion": conclusion(verdicts), "verdicts": verdicts,
                 "environments": {"head": describe(head), "base": describe(base)},
                 "baseline_run": base_line.computed_run or (base_line.reused_from or [None])[0]}
    run = Run(id=run_id, backend=settings.backend, upstream=changeset.upstream,
              base=changeset.base, head=changeset.head, title=changeset.title, trigger=trigger,
              ref=ref, delivery_id=delivery_id, started_at=started,
              finished_at=datetime.now(timezone.utc),
              universe=selection.universe, selected=len(to_run),
              stages=list(state.stats), results=final, counts=Run.count_outcomes(final), **extra)
    progress.phase("storing")
    engine = make_engine(settings.database_url)
    try:
        create_schema(engine)
        factory = make_session_factory(engine)

        def store() -> None:
            with factory() as session:
                save_run(session, run)

        retry_locked(store)  # minutes of tests are not thrown away for a busy database
    finally:
        engine.dispose()
    if run.environments:
        from relay.regression import store_verdicts

        store_verdicts(run, settings=settings)
    notes = list(state.notes)
    if commits is not None and commit_env is not None and len(commits) > 1 \
            and any(v.verdict == "NEW" for v in run.verdicts):
        from relay.bisection import BisectionError, find_culprit, store_culprit

        progress.phase(f"bisecting {len(commits)} commits")
        try:
            culprit = find_culprit(run, commits, commit_env, settings=settings, spec_paths=specs,
                                   workdir=workdir / "bisect", device=device,
                                   timeout_s=timeout_s, shards=shards, upstream=upstream,
                                   phase=progress.phase)
        except BisectionError as exc:
            log.error("%s", exc)
            notes.append(f"no culprit: {exc}")
        else:
            if culprit is not None:
                store_culprit(run.id, culprit, settings)
                run = run.model_copy(update={"culprit": culprit})
    outcome = RunOutcome(run=run, selection=selection, notes=notes,
                         proposals=list(state.proposals), workdir=workdir)
    if report:
        progress.phase("reporting")
        from relay.hud.client import post_results

        try:
            post_results(run, settings, event_type="replay" if trigger == "replay" else None)
        except Exception as exc:  # noqa: BLE001 — the run is stored; reporting retries later
            log.error("posting run %s to the dashboard failed: %s", run.id, exc)
            outcome.report_error = str(exc)
    return outcome
