"""``CeleryExecutors``: ``relay replay``'s executors when a broker is configured — each call
runs its ids as a chord of shard tasks over the workers and waits for it.

The caller is the CLI process, never a task, so waiting on the chord's result is allowed.  Each
call gets a fresh run key (``<work dir name>-<call>-<random>``); results come back through the
database and the result backend (``relay.aggregate``), in the ids' order; ``on_result`` is
called per result once the chord returns.  Nothing is shared on disk: the spec files go in the
messages (``relay.worker.celery.specs``).

Raises ``ExecutionFailed`` when a chord fails or does not finish within ``RELAY_RESULT_WAIT_S``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from celery import Celery, chord

from relay.envs.environments import Environment
from relay.errors import ExecutionFailed
from relay.pipeline.ports import Executor
from relay.settings import Settings
from relay.worker.celery.config import make_celery
from relay.worker.celery.names import AGGREGATE
from relay.worker.celery.shards import shard_signatures
from relay.worker.celery.specs import spec_refs
from test_specs.values.planned import ModeRule
from test_specs.values.results import TestResult

__all__ = ["CeleryExecutors", "CeleryExecutor"]

_APPS: dict[tuple, Celery] = {}


def _app_for(settings: Settings) -> Celery:
    """One Celery app (and broker connection pool) per broker configuration and process."""
    key = (settings.broker_url, settings.result_backend, settings.celery_queue,
           settings.visibility_timeout_s, settings.restore_interval_s)
    if key not in _APPS:
        _APPS[key] = make_celery(settings)
    return _APPS[key]


class CeleryExecutor:
    """Callable ``execute(ids)`` running ``ids`` as one chord per call (see the module
    docstring).  ``env`` and ``python`` go to ``run_items`` on the worker (an environment's
    interpreter path must exist on the worker machines)."""

    def __init__(self, settings: Settings, spec_paths: Sequence[Path], *, device: str = "spyre",
                 timeout_s: float = 120, reruns: int = 2, label: str = "run",
                 on_result: Callable[[TestResult], None] | None = None,
                 env: dict[str, str] | None = None, python: str | None = None,
                 modes: Mapping[str, ModeRule] | None = None) -> None:
        self.settings = settings
        self.app = _app_for(settings)
        self.specs = spec_refs(spec_paths)
        self.device, self.timeout_s, self.reruns = device, timeout_s, reruns
        self.label, self.on_result, self.env, self.python = label, on_result, env, python
        self.modes = dict(modes or {})
        self.calls = 0
        self.run_keys: list[str] = []

    def signature(self, run_key: str, ids: Sequence[str]) -> Any:
        """The chord for ``ids`` under ``run_key`` (not sent)."""
        header = shard_signatures(self.app, self.settings, run_key, ids, self.specs,
                                  device=self.device, timeout_s=self.timeout_s,
                                  reruns=self.reruns, env=self.env, python=self.python,
                                  modes=self.modes)
        return chord(header, self.app.signature(AGGREGATE, args=(run_key, list(ids))), app=self.app)

    def __call__(self, ids: Sequence[str]) -> list[TestResult]:
        self.calls += 1
        if not ids:
            return []
        run_key = f"{self.label[:60]}-{self.calls}-{uuid.uuid4().hex[:12]}"
        self.run_keys.append(run_key)
        result = self.signature(run_key, ids).apply_async()
        try:
            rows = result.get(timeout=self.settings.result_wait_s, propagate=True)
        except Exception as exc:  # noqa: BLE001 - any broker/backend/task error
            raise ExecutionFailed(f"distributed execution {run_key} of {len(ids)} tests failed: "
                                  f"{type(exc).__name__}: {exc}") from exc
        results = [TestResult.model_validate(r) for r in rows]
        if self.on_result is not None:
            for r in results:
                self.on_result(r)
        return results


class CeleryExecutors:
    """The ``ExecutorFactory`` (``relay.pipeline.ports``) of a replay on Celery workers."""

    def __init__(self, settings: Settings, spec_paths: Sequence[Path], *, device: str = "spyre",
                 timeout_s: float = 120) -> None:
        self.settings = settings
        self.spec_paths = list(spec_paths)
        self.device, self.timeout_s = device, timeout_s

    def __call__(self, workdir: Path, *, environment: Environment | None = None,
                 on_result: Callable[[TestResult], None] | None = None,
                 modes: Mapping[str, ModeRule] | None = None) -> Executor:
        return CeleryExecutor(self.settings, self.spec_paths, device=self.device,
                              timeout_s=self.timeout_s, label=workdir.name, on_result=on_result,
                              modes=modes,
                              env=None if environment is None else environment.env,
                              python=None if environment is None else str(environment.python))
