"""Stage 4 — execution refinement: reclassify from the results of a run.

Called once per run, after execution.  It

* reruns every ``failed`` test that was attempted only once (the runner may already have rerun
  it, PyTorch's 2 reruns) through the executor; a test that fails and then passes is relabelled
  ``flaky`` (PyTorch CI's convention: failed-then-passed is flaky, not a regression) — except a
  deterministic device refusal (``test_specs.values.refusals``), which a rerun cannot change: its
  result says so (``not_rerun``) instead;
* finds failures caused by an op the device cannot run (the backend's
  ``NotImplementedError("spyre: aten::<op> ...")``) and writes a *proposed* spec edit — a YAML
  fragment adding ``force_xfail`` entries with reason and issue — for a person to review.  The
  spec itself is never changed here.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import yaml

from selection.stage import Executor, SelectionState
from test_specs.values.refusals import mark_not_rerun, refusal_of
from test_specs.values.results import TestResult

UNSUPPORTED = re.compile(r"spyre: (aten::[A-Za-z0-9_.]+)[^\n]*not supported")


def unsupported_op_of(result: TestResult) -> str | None:
    """The aten op named in an unsupported-op failure message, else ``None``."""
    if result.outcome not in ("failed", "crashed") or not result.message:
        return None
    m = UNSUPPORTED.search(result.message)
    return m.group(1) if m else None


class Refine:
    """Stage 4: rerun failures once (flaky relabel) and propose spec edits.

    ``executor`` runs item ids and returns their results; ``proposal_dir`` receives the
    proposed-edit file (``spec-proposals.yaml``) when there is something to propose.
    in = executed results; out = refined results (the same tests, some relabelled ``flaky``).
    """

    name = "refine"

    def __init__(self, executor: Executor, proposal_dir: Path | None = None) -> None:
        self.executor = executor
        self.proposal_dir = proposal_dir

    def count_in(self, state: SelectionState) -> int:
        return len(state.results)

    count_out = count_in

    def run(self, state: SelectionState) -> SelectionState:
        """Called once per executed run, after the tests ran: reruns first-attempt failures once
        (failed-then-passed is flaky) and proposes spec edits for unsupported-op failures."""
        # A failure already retried by the runner (pytest-rerunfailures: attempts > 1) has had
        # its rerun; only first-attempt failures are rerun here.
        failed = [r for r in state.results if r.outcome == "failed" and r.attempts < 2
                  and unsupported_op_of(r) is None and refusal_of(r) is None]
        reruns = {r.id: r for r in self.executor([r.id for r in failed])} if failed else {}
        refined: list[TestResult] = []
        for r in state.results:
            again = reruns.get(r.id)
            if again is not None and again.outcome == "passed":
                r = r.model_copy(update={"outcome": "flaky", "attempts": r.attempts + again.attempts,
                                         "message": f"failed, then passed on rerun: {r.message or ''}"[:500]})
            elif again is not None:
                r = r.model_copy(update={"attempts": r.attempts + again.attempts})
            else:
                r = mark_not_rerun(r)
            refined.append(r)
        proposals = state.proposals
        path = self.propose(refined)
        if path is not None:
            proposals = proposals + (str(path),)
        return replace(state, results=tuple(refined), proposals=proposals)

    def propose(self, results: list[TestResult]) -> Path | None:
        """Write ``spec-proposals.yaml`` for unsupported-op failures; ``None`` if none."""
        by_op: dict[tuple[str, str], dict] = {}
        for r in results:
            aten = unsupported_op_of(r)
            if aten is None or r.op is None:
                continue
            entry = by_op.setdefault((r.op, aten), {"name": r.op, "force_xfail": True,
                                                    "reason": f"{aten} has no Spyre kernel",
                                                    "issue": "TODO: file or link the tracking issue",
                                                    "tests": []})
            entry["tests"].append(r.id)
        if not by_op or self.proposal_dir is None:
            return None
        self.proposal_dir.mkdir(parents=True, exist_ok=True)
        path = self.proposal_dir / "spec-proposals.yaml"
        body = {"test_suite_config": {"global": {"supported_ops": [
            {k: v for k, v in e.items() if k != "tests"} for _, e in sorted(by_op.items())]}}}
        header = ["# Proposed spec edits (review before applying; nothing was changed).",
                  "# Failures below were caused by ops the device cannot run:"]
        for (_, aten), e in sorted(by_op.items()):
            header.append(f"#   {aten}: {len(e['tests'])} tests, e.g. {e['tests'][0]}")
        path.write_text("\n".join(header) + "\n" + yaml.safe_dump(body, sort_keys=False))
        return path
