"""Measure which OpInfo (op, dtype) pairs run on Spyre and match the CPU.

Usage::

    python -m spyre_backend.opinfo_check [--ops add,mul | --all] [--dtypes float16,float32]
                                         [--grad] [--json] [--out FILE [--update]] [--jobs N]

``--ops`` takes OpInfo names (every variant of a name is included) or ``name.variant``
subjects; the default is ``FIRST_SPEC_OPS``; ``--all`` takes every OpInfo in ``op_db``.
Each (subject, dtype) is compared by ``spyre_backend.opinfo_compare.check_op`` (``--grad``:
``check_grad``). With ``--out FILE`` the results are written in the committed table format
of ``spyre_backend.opinfo_results`` (regenerate the table with
``--all --out spyre_backend/opinfo_results.json``; ``--update`` re-runs only the selected
subjects and keeps the table's other rows).

Containment: ``--out``/``--all`` runs the comparisons in ``--jobs`` worker processes (default 2).
A pair that kills its worker (segfault, abort) or makes no progress for ``STALL_SECONDS`` is
recorded as ``error`` and the worker is restarted after it; inside a worker each pair has a
``PAIR_TIMEOUT_SECONDS`` alarm.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import torch

import spyre_backend  # noqa: F401  (must precede torch.testing._internal imports)

from . import opinfo_results
from .opinfo_compare import TOLERANCES, check_grad, check_op, subject_name
from .opinfo_results import Outcome

__all__ = ["FIRST_SPEC_OPS", "select_opinfos", "sweep", "main"]

FIRST_SPEC_OPS = (
    "add sub mul div neg abs exp log sqrt rsqrt tanh sigmoid sin cos nn.functional.relu "
    "nn.functional.gelu nn.functional.silu softmax log_softmax sum mean amax matmul mm bmm addmm "
    "addcmul addcdiv where clamp pow transpose permute reshape cat stack nn.functional.layer_norm "
    "nn.functional.linear nn.functional.embedding var cumsum index_put nn.functional.dropout"
).split()

PAIR_TIMEOUT_SECONDS = 600
STALL_SECONDS = 900


def select_opinfos(names: list[str] | None) -> list:
    """OpInfos of ``op_db`` matching ``names`` (OpInfo names or subjects); all when None."""
    from torch.testing._internal.common_methods_invocations import op_db

    if names is None:
        return list(op_db)
    wanted = set(names)
    return [o for o in op_db if o.name in wanted or subject_name(o) in wanted]


class _PairTimeout(BaseException):
    """Raised by SIGALRM; a BaseException so ``check_op``'s ``except Exception`` lets it through."""


def _on_alarm(signum, frame):  # noqa: ARG001
    raise _PairTimeout()


def _run_pair(opinfo, dtype: str, grad: bool) -> Outcome:
    torch.manual_seed(0)
    check = check_grad if grad else check_op
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(PAIR_TIMEOUT_SECONDS)
    try:
        return check(opinfo, getattr(torch, dtype))
    except _PairTimeout:
        return Outcome(subject_name(opinfo), dtype, "error", reason=f"timed out after {PAIR_TIMEOUT_SECONDS} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _worker(pairs: list[tuple[str, str]], out: Path, grad: bool) -> None:
    """Run ``pairs`` in this process, appending ``start``/``done`` JSON lines to ``out``."""
    warnings.simplefilter("ignore")
    by_subject = {subject_name(o): o for o in select_opinfos(None)}
    with out.open("a", encoding="utf-8") as f:
        for subject, dtype in pairs:
            f.write(json.dumps({"event": "start", "subject": subject, "dtype": dtype}) + "\n")
            f.flush()
            outcome = _run_pair(by_subject[subject], dtype, grad)
            f.write(json.dumps({"event": "done", **outcome.to_json()}) + "\n")
            f.flush()


def _read_log(path: Path) -> tuple[dict[tuple[str, str], Outcome], tuple[str, str] | None]:
    done: dict[tuple[str, str], Outcome] = {}
    started = None
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            key = (row["subject"], row["dtype"])
            if row.pop("event") == "start":
                started = key
            else:
                done[key] = Outcome(**row)
    return done, (started if started not in done else None)


def _run_shard(pairs: list[tuple[str, str]], log: Path, grad: bool, results: dict) -> None:
    """Drive one worker subprocess over ``pairs``, restarting it after a crash or stall."""
    remaining = list(pairs)
    while remaining:
        cmd = [sys.executable, "-m", "spyre_backend.opinfo_check", "--worker", str(log)] + (["--grad"] if grad else [])
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        proc.stdin.write(json.dumps(remaining))
        proc.stdin.close()
        last_size, last_change = -1, time.monotonic()
        while proc.poll() is None:
            time.sleep(1)
            size = log.stat().st_size if log.exists() else 0
            if size != last_size:
                last_size, last_change = size, time.monotonic()
            elif time.monotonic() - last_change > STALL_SECONDS:
                proc.kill()
        proc.wait()
        stderr = proc.stderr.read()
        done, crashed = _read_log(log)
        if crashed is not None:
            why = "stalled (killed)" if proc.returncode == -signal.SIGKILL else f"worker died (exit {proc.returncode})"
            tail = stderr.strip().splitlines()[-1][:200] if stderr.strip() else ""
            done[crashed] = Outcome(crashed[0], crashed[1], "error", reason=f"{why} {tail}".strip())
            with log.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"event": "done", **done[crashed].to_json()}) + "\n")
        elif proc.returncode != 0 and not all(p in done for p in remaining):
            raise RuntimeError(f"opinfo_check worker failed: {stderr[-2000:]}")
        results.update(done)
        remaining = [p for p in remaining if p not in done]


def sweep(opinfos: list, dtypes: list[str], jobs: int = 2, grad: bool = False) -> list[Outcome]:
    """Compare every (opinfo, dtype) in ``jobs`` contained worker processes; outcomes in input order."""
    pairs = [(subject_name(o), d) for o in opinfos for d in dtypes]
    shards = [pairs[i::jobs] for i in range(jobs)]
    results: dict[tuple[str, str], Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="spyre_opinfo_") as tmp:
        threads = [
            threading.Thread(target=_run_shard, args=(shard, Path(tmp) / f"shard{i}.jsonl", grad, results))
            for i, shard in enumerate(shards) if shard
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return [results[p] for p in pairs if p in results]


def main(argv: list[str] | None = None) -> int:
    """Run the sweep; print one line per (subject, dtype), JSON with ``--json``, or write ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default=",".join(FIRST_SPEC_OPS))
    parser.add_argument("--all", action="store_true", help="every OpInfo in op_db")
    parser.add_argument("--dtypes", default="float16,float32")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--grad", action="store_true", help="compare gradients instead of outputs")
    parser.add_argument("--out", help="write the results table (opinfo_results format) here")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--update", action="store_true",
                        help="with --out: keep the other rows of the existing table, replace only the pairs run now")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    if ns.worker:
        _worker([tuple(p) for p in json.load(sys.stdin)], Path(ns.worker), ns.grad)
        return 0
    dtypes = ns.dtypes.split(",")
    opinfos = select_opinfos(None if ns.all else ns.ops.split(","))
    start = time.monotonic()
    if ns.out or ns.all:
        outcomes = sweep(opinfos, dtypes, jobs=ns.jobs, grad=ns.grad)
    else:
        warnings.simplefilter("ignore")
        outcomes = [_run_pair(o, d, ns.grad) for o in opinfos for d in dtypes]
    if ns.out:
        meta = {
            "torch": torch.__version__,
            "precision": os.environ.get("SPYRE_SIM_PRECISION", "fp16"),
            "comparison": "gradients" if ns.grad else "outputs",
            "generated_by": "python -m spyre_backend.opinfo_check "
                            + " ".join(argv if argv is not None else sys.argv[1:]),
            "elapsed_s": round(time.monotonic() - start, 1),
        }
        if ns.update and Path(ns.out).exists():
            old = opinfo_results.load_file(ns.out)
            old.update({(o.subject, o.dtype): o for o in outcomes})
            outcomes = list(old.values())
            meta["generated_by"] += " (update of a full --all sweep)"
        present = {o.dtype for o in outcomes}
        meta["tolerances"] = {d: {"atol": a, "rtol": r} for d, (a, r) in TOLERANCES.items() if d in present}
        opinfo_results.dump(outcomes, ns.out, meta)
        for dtype, counts in opinfo_results.summary({(o.subject, o.dtype): o for o in outcomes}).items():
            ran = sum(counts.values()) - counts["skip"]
            print(f"{dtype}: {counts['pass']}/{ran} pass ({100 * counts['pass'] / max(ran, 1):.1f}%) {counts}")
    elif ns.json:
        json.dump([o.to_json() for o in outcomes], sys.stdout, indent=1)
    else:
        for o in outcomes:
            detail = o.reason or (f"{o.samples} samples" if o.passed else "")
            if o.status == "mismatch":
                detail = f"{o.mismatched}/{o.samples} samples, max abs {o.max_abs_err}, max rel {o.max_rel_err}"
            elif o.aten_op:
                detail = f"{o.aten_op}: {o.reason}"
            print(f"{o.subject:<40} {o.dtype:<9} {o.status:<20} {detail[:150]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
