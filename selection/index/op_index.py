"""Repository memory: the test → aten-op index, captured with ``TorchDispatchMode``.

Each OpInfo spec item is run once on its sample inputs under a dispatch mode that records the
schema name of every aten op reaching dispatch (``aten::_softmax``, …).  Inputs are moved to the
device outside the mode, so the record holds the op's own aten calls, not data movement.  The
index is cached as JSON per (torch version, device): a later build captures only new items.
ModuleInfo items are captured forward and backward by ``selection.index.module_capture``.  Items
without a capture (a module that cannot be built, an OpInfo missing from ``op_db``) have no
entry; the memory stage keeps them (fail soft).  A capture that fails for one item (its samples
cannot reach the device: ``SpyreDtypeError`` for a float64 sample, an OpInfo whose sample
generator raises) costs that item only: ``failures`` records why (cached next to the index,
``op_index-v<format>-<torch>-<device>.failures.json``) and the memory stage names it in the item's reasons.
"""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from collections.abc import Iterable
from pathlib import Path

from selection.index.cachefile import write_atomic
from selection.index.shipped import read_shipped
from test_specs.values.items import SpecItem

log = logging.getLogger(__name__)

#: Ops that only move or allocate data; recorded captures drop them (every test has them).
DATA_MOVEMENT = frozenset({"aten::_to_copy", "aten::copy_", "aten::empty_strided", "aten::empty",
                           "aten::_copy_from", "aten::_copy_from_and_resize", "aten::lift_fresh",
                           "aten::detach", "aten::alias", "aten::clone"})


def _opinfo_table() -> dict[str, object]:
    from torch.testing._internal.common_methods_invocations import op_db

    table: dict[str, object] = {}
    for op in op_db:
        subject = f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name
        table.setdefault(subject, op)
    return table


def torch_version() -> str:
    """The installed torch's version (``2.13.0+cpu``, as ``torch.__version__``) from its package
    metadata: reading the caches must not import torch (seconds on a loaded machine)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:  # a source build without metadata
        import torch

        return torch.__version__


def cached_generators(cache_dir: Path | None) -> dict[str, frozenset[str]]:
    """``opinfo_generators`` once per torch version, cached as ``opinfo_generators-<torch>.json``."""
    path = Path(cache_dir) / f"opinfo_generators-{torch_version()}.json" if cache_dir else None
    if path is not None and path.exists():
        try:
            return {k: frozenset(v) for k, v in json.loads(path.read_text()).items()}
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable generator cache %s: %s", path, exc)
    gens = opinfo_generators()
    if path is not None:
        write_atomic(path, json.dumps({k: sorted(v) for k, v in gens.items()}, sort_keys=True))
    return gens


def opinfo_generators() -> dict[str, frozenset[str]]:
    """Sample/reference/error input generator name → OpInfo subjects that use it."""
    gens: dict[str, set[str]] = {}
    for subject, op in _opinfo_table().items():
        for attr in ("sample_inputs_func", "reference_inputs_func", "error_inputs_func"):
            fn = getattr(op, attr, None)
            name = getattr(fn, "__name__", None)
            if name and name.startswith(("sample_inputs_", "reference_inputs_", "error_inputs_")):
                gens.setdefault(name, set()).add(subject)
    return {k: frozenset(v) for k, v in gens.items()}


#: Capture stopping rule (issue 28): every sample up to ``MIN_SAMPLES``, then on until
#: ``PATIENCE`` samples in a row add no op.  The first 8 samples alone missed ``aten::mm`` of
#: ``nn.functional.linear`` (sample 11) and 15 of 300 sampled items' ops; on 300 random bundled
#: items (2026-12-06) this rule missed none of the ops all samples reach, at 1.9× the time of 8
#: samples (all samples: 6.1×; ``unique`` has 528).
MIN_SAMPLES = 48
PATIENCE = 32
#: Bumped when what a capture records changes: part of the cache file name, so an index
#: captured under the old rule is recaptured, never mixed with the new.
CAPTURE_FORMAT = 3


def capture_ops(item: SpecItem, device: str, *, min_samples: int = MIN_SAMPLES,
                patience: int = PATIENCE) -> list[str]:
    """The aten ops (sorted schema names) the item's op calls on ``device`` for its samples.

    Runs the OpInfo samples in ``item.dtype``: all of the first ``min_samples``, then until
    ``patience`` samples in a row add no op (or the samples end); an op that raises (e.g. an
    unsupported op on Spyre) is still recorded, because dispatch saw it before the kernel failed.
    On ``spyre`` the ops that reach the device below the dispatch mode are added
    (``spyre_backend.trace.collecting``, overloads dropped): ``stack`` reaches the device as
    ``aten::cat``, which the mode above it never sees (issue 28, measured by ``bench/op_recall.py``).
    Raises ``KeyError`` if the item's OpInfo is not in the installed ``op_db``.
    """
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    op = _opinfo_table()[item.subject]
    dtype = getattr(torch, item.dtype)
    seen: set[str] = set()

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(func._schema.name)
            return func(*args, **(kwargs or {}))

    def move(x):
        return x.to(device) if isinstance(x, torch.Tensor) else x

    device_ops: set[str] = set()
    collect = contextlib.nullcontext(device_ops)
    if device == "spyre":
        from spyre_backend.trace import collecting

        collect = collecting()
    # Numerical warnings of the samples (fp16 precision, degrees of freedom, ...) say nothing
    # about which ops a test calls; the index run keeps them out of the user's terminal.
    with warnings.catch_warnings(), collect as device_ops:
        warnings.simplefilter("ignore")
        grew = 0  # the last sample that added an op
        for n, sample in enumerate(op.sample_inputs("cpu", dtype)):
            if n >= min_samples and n - grew > patience:
                break
            before = len(seen)
            s = sample.transform(move) if device != "cpu" else sample
            with Recorder():
                try:
                    op(s.input, *s.args, **s.kwargs)
                except Exception:  # the attempt is what we index, not the outcome
                    pass
            seen.update(o.split(".")[0] for o in device_ops)
            if len(seen) > before:
                grew = n
    return sorted(seen - DATA_MOVEMENT)


class TestOpIndex:
    """Test id → aten ops, with the reverse map; persisted as JSON in ``cache_dir``.
    ``failures``: test id → why its capture failed (``ExceptionType: message``)."""

    __test__ = False

    def __init__(self, entries: dict[str, list[str]], failures: dict[str, str] | None = None) -> None:
        self.entries = entries
        self.failures = dict(failures or {})
        self.by_op: dict[str, set[str]] = {}
        for test_id, ops in entries.items():
            for op in ops:
                self.by_op.setdefault(op, set()).add(test_id)

    @property
    def aten_ops(self) -> frozenset[str]:
        return frozenset(self.by_op)

    def tests_for(self, aten_ops: Iterable[str]) -> set[str]:
        """Ids of tests that call any of ``aten_ops``."""
        out: set[str] = set()
        for op in aten_ops:
            out |= self.by_op.get(op, set())
        return out

    @classmethod
    def build(cls, items: Iterable[SpecItem], *, device: str, cache_dir: Path | None,
              shipped: bool = True) -> TestOpIndex:
        """Load the cached index for this torch and device, capture missing items, save.

        ``device`` is ``"spyre"`` (imports ``spyre_backend``) or ``"cpu"``.  OpInfo items are
        captured on ``device``, ModuleInfo items on the CPU (``selection.index.module_capture``).
        The cache file is ``cache_dir/op_index-v<CAPTURE_FORMAT>-<torch>-<device>.json``; when
        it is absent (a fresh state directory, or ``cache_dir=None``) the shipped index
        (``selection.index.shipped``) seeds the entries unless ``shipped=False``, and only items
        it lacks are captured.
        """
        path = None
        entries: dict[str, list[str]] = {}
        failures: dict[str, str] = {}
        if cache_dir is not None:
            path = Path(cache_dir) / f"op_index-v{CAPTURE_FORMAT}-{torch_version()}-{device}.json"
            entries, failures = _load(path), _load(path.with_suffix(".failures.json"))
        if shipped and not entries and not failures:  # a fresh state: start from the shipped index
            entries, failures = read_shipped(device, torch_version(), CAPTURE_FORMAT)
        missing = [i for i in items if (i.op is not None or i.module is not None)
                   and i.id not in entries and i.id not in failures]
        if missing:
            if device == "spyre":
                import spyre_backend  # noqa: F401  (registers the device; only to capture)
            from selection.index.module_capture import capture_module_ops

            table = _opinfo_table()
            for n, item in enumerate(missing, 1):
                try:
                    if item.op is not None and item.subject in table:
                        entries[item.id] = capture_ops(item, device)
                    elif item.module is not None and (ops := capture_module_ops(item.module)) is not None:
                        entries[item.id] = sorted(set(ops) - DATA_MOVEMENT)
                except Exception as exc:  # noqa: BLE001 — fail soft per item: it stays unindexed
                    failures[item.id] = f"{type(exc).__name__}: {exc}"[:300]
                if path is not None and n % CHECKPOINT_EVERY == 0:  # an interrupted build resumes
                    _save(path, entries, failures)
            if path is not None:
                _save(path, entries, failures)
        return cls(entries, failures)


#: Items captured between cache checkpoints during a build (a full 8,000-item build takes minutes).
CHECKPOINT_EVERY = 500


def _load(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable op index cache %s: %s", path, exc)
        return {}


def _save(path: Path, entries: dict[str, list[str]], failures: dict[str, str]) -> None:
    for target, data in ((path, entries), (path.with_suffix(".failures.json"), failures)):
        write_atomic(target, json.dumps(data, sort_keys=True))
