"""``CeleryExecutor``: run a list of item ids as a chord of shard tasks over the workers.

An executor is what ``relay.pipeline.run.make_executor`` returns: ``execute(ids) -> [TestResult]``
in ``ids`` order, called once for the run and once per refinement (reruns).  Each call gets a
fresh ``run_key`` (``<run dir name>-<call>-<random>``); the ids are split with the runner's
deterministic ``shard_split`` into ceil(n / ``RELAY_SHARD_SIZE``) shards, sent as
``chord([relay.run_shard ...], relay.aggregate)``, and the caller blocks on the chord result
(up to ``RELAY_RESULT_WAIT_S`` seconds).  ``progress.result`` is called per result after the
chord returns.  Results travel through the database and the result backend; nothing is shared
on disk — the spec files go in the messages (``specs.spec_refs``).

Raises ``ExecutionFailed`` when the chord fails or times out.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from celery import chord

from relay.worker.celery.config import as_distributed, make_celery
from relay.worker.celery.specs import spec_refs
from relay.worker.celery.tasks import AGGREGATE, RUN_SHARD
from relay.settings import Settings
from test_specs.results import TestResult

__all__ = ["CeleryExecutor", "ExecutionFailed", "plan_shards"]


_APPS: dict[tuple, Any] = {}


def _app_for(settings: Any) -> Any:
    """One Celery app (and broker connection pool) per broker configuration and process."""
    key = (settings.broker_url, settings.result_backend, settings.celery_queue,
           settings.visibility_timeout_s, settings.restore_interval_s)
    if key not in _APPS:
        _APPS[key] = make_celery(settings)
    return _APPS[key]


class ExecutionFailed(RuntimeError):
    """The distributed execution of a run's items did not complete."""


def plan_shards(ids: Sequence[str], shard_size: int) -> list[list[str]]:
    """``shard_split(ids, ceil(n / shard_size))``; raises ``ValueError`` for duplicates or a
    size below 1."""
    from test_specs.runner import shard_split

    if shard_size < 1:
        raise ValueError("shard_size must be >= 1")
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate item ids")
    return shard_split(list(ids), max(1, math.ceil(len(ids) / shard_size)))


class CeleryExecutor:
    """Callable ``execute(ids)``; see the module docstring.

    ``on_result``: called once per returned result (the pipeline's progress).  ``env`` and
    ``python`` are passed to ``run_items`` on the worker (an environment's interpreter path
    must exist on the worker machines).
    """

    def __init__(self, settings: Settings, spec_paths: Sequence[Path], *, device: str = "spyre",
                 timeout_s: float = 120, reruns: int = 2, label: str = "run",
                 on_result: Callable[[TestResult], None] | None = None,
                 env: dict[str, str] | None = None, python: str | None = None) -> None:
        self.settings = as_distributed(settings)
        self.app = _app_for(self.settings)
        self.specs = spec_refs(spec_paths)
        self.device, self.timeout_s, self.reruns = device, timeout_s, reruns
        self.label, self.on_result, self.env, self.python = label, on_result, env, python
        self.calls = 0
        self.run_keys: list[str] = []

    def signature(self, run_key: str, ids: Sequence[str]) -> Any:
        """The chord for ``ids`` under ``run_key`` (not sent)."""
        header = [self.app.signature(RUN_SHARD, args=(run_key, k, part, self.specs),
                                     kwargs={"device": self.device, "timeout_s": self.timeout_s,
                                             "reruns": self.reruns, "env": self.env,
                                             "python": self.python})
                  for k, part in enumerate(plan_shards(ids, self.settings.shard_size))]
        return chord(header, self.app.signature(AGGREGATE, args=(run_key, list(ids))),
                     app=self.app)

    def __call__(self, ids: Sequence[str]) -> list[TestResult]:
        self.calls += 1
        if not ids:
            return []
        run_key = f"{self.label[:60]}-{self.calls}-{uuid.uuid4().hex[:12]}"
        self.run_keys.append(run_key)
        result = self.signature(run_key, ids).apply_async()
        try:
            rows = result.get(timeout=self.settings.result_wait_s, disable_sync_subtasks=False,
                              propagate=True)
        except Exception as exc:  # noqa: BLE001 - any broker/backend/task error
            raise ExecutionFailed(f"distributed execution {run_key} of {len(ids)} tests failed: "
                                  f"{type(exc).__name__}: {exc}") from exc
        results = [TestResult.model_validate(r) for r in rows]
        if self.on_result is not None:
            for r in results:
                self.on_result(r)
        return results
