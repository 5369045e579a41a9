"""``relay run --spec SPEC... [--upstream TORCH_ROOT] [--json]``: whole specs, no selection.

What torch-spyre's ``run_test.sh`` does for its configs: every test a spec names runs, under the
spec's rules, on the simulated device.  Items: the spec's ``source:`` entries (``op_db`` /
``module_db`` templates), its captured model-ops / module-tests entries, and — with
``--upstream`` (else ``$TORCH_ROOT``) — the upstream test files of its ``path:`` entries
(source-tree mode, ``test_specs.upstream.tree``).  A path matching no file and a name matching no
test are printed as ``spec:line:col: warning: ...`` (``--strict``: errors, exit 2).

Output: a progress bar with the running totals (stderr), the JUnit XML of the run (``--junit``,
default ``<workdir>/junit.xml``), and with ``--json`` a summary on stdout::

    {"specs": [...], "upstream": "/src/pytorch" | null, "total": 352, "wall_s": 41.2,
     "counts": {"passed": 300, "xfailed": 50, "failed": 2}, "junit": ".../junit.xml",
     "problems": ["spec.yaml:12:9: warning: ..."],
     "results": [{"id": ..., "outcome": "failed", "duration_ms": 12.0, "message": "..."}]}

Exit code 1 when any test failed, crashed or timed out (``BAD_OUTCOMES``), else 0.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer

from relay.cli.common import RelayCommand, app, err, fail, spec_files_or_fail


def _items(specs: list[Path], upstream: Path | None, strict: bool) -> tuple[list[str], list[str]]:
    """(item ids, diagnostics) of the specs; ends the command on a spec that does not expand."""
    from test_specs.expand.universe import expand
    from test_specs.format.loader import SpecLoadError

    problems: list[str] = []
    try:
        ids = [it.id for it in expand(specs)]
        if upstream is not None:
            from test_specs.upstream.tree import collect

            up, problems = collect(specs, upstream, strict=strict)
            ids += [it.id for it in up]
    except SpecLoadError as exc:
        fail(str(exc))
    except (ValueError, RuntimeError) as exc:
        fail(str(exc).strip().splitlines()[0] if strict else str(exc))
    return sorted(set(ids)), problems


def _existing_parent(path: Path) -> Path:
    """The nearest existing folder at or above ``path``'s parent (``--junit`` creates the rest)."""
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    return parent


@app.command("run", cls=RelayCommand)
def run_specs(
    spec: Annotated[list[Path], typer.Option("--spec", help="Spec file (repeatable).")],
    upstream: Annotated[Path | None, typer.Option(help="PyTorch checkout for path: entries "
                                                       "(default $TORCH_ROOT).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
    junit: Annotated[Path | None, typer.Option(help="Write the JUnit XML here.")] = None,
    workdir: Annotated[Path | None, typer.Option(help="Run directory (default: a new temp dir).")] = None,
    device: Annotated[str, typer.Option(help="spyre or cpu.")] = "spyre",
    shards: Annotated[int | None, typer.Option(min=1, help="pytest-xdist workers (default: one per core).")] = None,
    reruns: Annotated[int, typer.Option(min=0, help="Reruns of a failing test.")] = 0,
    timeout: Annotated[int, typer.Option(min=1, help="Seconds per test.")] = 300,
    strict: Annotated[bool, typer.Option(help="Diagnostics are errors.")] = False,
) -> None:
    """Run whole specs without selection (run_test.sh).

    Shows a progress bar, writes JUnit XML and a summary with counts by outcome; exit 1 on a
    failed, crashed or timed-out test.

    \b
    Examples:
      relay run --spec test_specs/specs/opinfo_core.yaml --junit results.xml
      relay run --spec my_config.yaml --upstream ~/pytorch --shards 2
    """
    from relay.cli.render import BarProgress
    from test_specs.run.runner import default_shards, run_items
    from test_specs.values.results import BAD_OUTCOMES, OUTCOMES

    specs = spec_files_or_fail(spec) or []
    root = upstream if upstream is not None else (Path(os.environ["TORCH_ROOT"]) if os.environ.get("TORCH_ROOT")
                                                   else None)
    if root is not None and not root.is_dir():
        fail(f"--upstream {root}: not a directory")
    if junit is not None and (junit.is_dir() or not os.access(_existing_parent(junit), os.W_OK)):
        fail(f"--junit {junit}: not a writable file path")
    started = time.monotonic()
    progress = BarProgress(err)
    progress.phase("collecting")
    ids, problems = _items(specs, root.resolve() if root else None, strict)
    for line in problems:
        err.print(line, markup=False, highlight=False)
    wd = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="relay-run-"))
    progress.total(len(ids))
    progress.phase("running tests")
    try:
        results = run_items(ids, specs, workdir=wd, device=device, reruns=reruns, timeout_s=timeout,
                            on_result=progress.result, shards=shards or default_shards(), upstream=root)
    finally:
        progress.close()
    counts = {o: n for o in OUTCOMES if (n := sum(r.outcome == o for r in results))}
    xml = wd / "junit.xml"
    if junit is not None and xml.exists():
        try:
            junit.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(xml, junit)
            xml = junit
        except OSError as exc:  # the run's own copy stays in the run directory
            err.print(f"error: --junit {junit}: {exc.strerror or exc}; the JUnit XML stays at {xml}",
                      markup=False, highlight=False)
    summary = {"specs": [str(s) for s in specs], "upstream": str(root) if root else None, "total": len(results),
               "wall_s": round(time.monotonic() - started, 1), "counts": counts,
               "junit": str(xml) if xml.exists() else None, "problems": problems,
               "results": [{"id": r.id, "outcome": r.outcome, "duration_ms": r.duration_ms,
                            **({"message": r.message} if r.message else {})} for r in results]}
    if json_out:
        sys.stdout.write(json.dumps(summary, indent=1) + "\n")
    err.print(f"{len(results)} tests in {summary['wall_s']} s: " +
              (", ".join(f"{n} {o}" for o, n in counts.items()) or "nothing ran") + f"; JUnit XML {summary['junit']}")
    if any(r.outcome in BAD_OUTCOMES for r in results):
        raise typer.Exit(1)
