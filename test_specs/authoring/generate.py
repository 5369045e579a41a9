"""Generate the whole-database default specs from a measured sweep.

``python -m test_specs.authoring.generate RESULTS.jsonl[.gz] --out test_specs/specs [--max-samples 4]``
(the committed specs came from ``test_specs/measured/discovery_results.jsonl.gz``)

``RESULTS.jsonl`` is ``test_specs.run.sweep``'s output for a discovery run in which every item of
``opinfo_all`` (all op templates × all OpInfos × float16/bfloat16/float32) and ``modules``
(all module templates × all ModuleInfos × the same dtypes) was ``mandatory_success``.  Each
item that did not pass becomes part of a non-``mandatory_success`` entry whose ``reason`` and
``issue`` say why, grouped by cause:

- the device refused an aten op by a capability rule (``spyre_backend/capabilities.yaml``:
  in-device copy, stick layout, a kernel the Spyre stack lacks — each derived from what a
  torch-spyre config declares of real Spyre) → ``xfail``; reason naming the rule and the
  torch-spyre config, issue ``torch-spyre <config>: <rule>``;
- the device refused an aten op (``SpyreUnsupportedOpError``) → ``xfail``; reason from the
  support table (``spyre_backend.support.unsupported_reason``), issue ``spyre-sim unsupported:
  aten::<op>``;
- the device refused a dtype (``SpyreDtypeError``: float64/complex/integer outputs) → ``xfail``,
  issue ``spyre-sim dtype: aten::<op> <dtype>``;
- a numerical mismatch → ``xfail`` (fp16 compute, design §7), issue ``spyre-sim numerics:
  <template>``; any other failure → ``xfail``, issue ``spyre-sim measured: <exception type>``;
- skipped at run time (the mirrored upstream test would skip) → ``skip`` with that reason;
- crashed or timed out → ``skip`` (a crash costs a process restart in every run).

Every item of an OpInfo whose output is uninitialized memory (``UNINITIALIZED``: ``empty``,
``empty_like``, ...) is ``skip``: its measured outcome is random (a float32 ``test_out`` of
``empty`` xfailed in one run and passed in the next).  Other passing items stay
``mandatory_success``.  One entry per (template, dtype, cause): entries are
restricted to one dtype with ``edits.dtypes`` and name their subjects exactly (``exact: true``
for an OpInfo without a variant), so no item is produced twice.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import re
from pathlib import Path
from typing import Any

import yaml

DTYPES = ("bfloat16", "float16", "float32")
_UNSUPPORTED = re.compile(r"SpyreUnsupportedOpError: spyre: (aten::[\w.]+)")
_DTYPE = re.compile(r"SpyreDtypeError: spyre: (aten::[\w.]+) does not support dtype (\w+)")
_RAISED = re.compile(r"device raised (\w+)")
#: OpInfos whose output is uninitialized memory: a comparison of values passes or fails at random
UNINITIALIZED = frozenset({"empty", "empty_like", "empty_permuted", "empty_strided", "new_empty",
                           "new_empty_strided"})
UNINITIALIZED_REASON = ("the op's output is uninitialized memory: comparing its values passes or fails at random "
                        "(upstream's OpInfo skips such tests: 'empty is not comparable')")
UNINITIALIZED_ISSUE = "upstream OpInfo: empty-like outputs are not comparable"
_CAPABILITY = re.compile(r"spyre: (aten::[\w.]+)(?: \(\w+\))?:? (?:is not supported on Spyre: \S+ )?(.*?) "
                         r"\[capability (\w+); from torch-spyre (tests/configs/\S+)\]")


def cause(outcome: str, message: str | None, template: str) -> tuple[str, str, str]:
    """``(mode, reason, issue)`` for one measured non-passing item (see the module docstring)."""
    msg = (message or "").strip()
    if outcome in ("crashed", "timed_out"):
        return "skip", f"{outcome} in the measured sweep: {msg[:160]}", f"spyre-sim measured: {outcome}"
    if outcome == "skipped":
        return "skip", msg[:200] or "the mirrored upstream test skips this case", f"upstream {template} skips too"
    if m := _CAPABILITY.search(msg):
        aten, what, rule, config = m.groups()
        return ("xfail", f"{aten} is refused on Spyre: {what} (capability rule {rule} of "
                f"spyre_backend/capabilities.yaml; real Spyre fails too: torch-spyre {config})",
                f"torch-spyre {config}: {rule}")
    if m := _UNSUPPORTED.search(msg):
        from spyre_backend import support

        why = support.unsupported_reason(m.group(1)) or "not in the Spyre support table"
        return "xfail", f"{m.group(1)} is refused on Spyre: {why}", f"spyre-sim unsupported: {m.group(1)}"
    if m := _DTYPE.search(msg):
        return ("xfail", f"{m.group(1)} does not take {m.group(2)} on Spyre (support table dtype rule: float64, "
                "complex and most integer outputs are rejected)", f"spyre-sim dtype: {m.group(1)} {m.group(2)}")
    if "did not warn" in msg:
        return ("xfail", "the Spyre boxed fallback resizes a wrongly shaped out= tensor without PyTorch's "
                "'was resized' warning (measured)", "spyre-sim measured: out= resize warning")
    if "differs" in msg:
        return ("xfail", "device result differs from the reference beyond the tolerance: Spyre computes in "
                "float16 (design §7); per-item max abs/rel error in the sweep results",
                f"spyre-sim numerics: {template}")
    m = _RAISED.search(msg)
    kind = m.group(1) if m else "failure"
    return ("xfail", f"fails on Spyre in the measured sweep ({kind}); first seen: {msg[:160]}",
            f"spyre-sim measured: {kind}")


def build(results: list[dict[str, Any]], suite: str, *, modules: bool, max_samples: int,
          plain_ops: set[str]) -> dict[str, Any]:
    """The ``test_suite_config`` document for ``suite`` from its measured results."""
    groups: dict[tuple[str, str, str, str, str], list[str]] = collections.defaultdict(list)
    passing: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    for r in results:
        head, _, rest = r["id"].partition("[")
        template = head.split("::", 1)[1]
        subject, _, dtype = rest[:-1].rpartition("-")
        if subject in UNINITIALIZED:
            groups[(template, dtype, "skip", UNINITIALIZED_REASON, UNINITIALIZED_ISSUE)].append(subject)
        elif r["outcome"] in ("passed", "flaky"):
            passing[(template, dtype)].append(subject)
        else:
            mode, reason, issue = cause(r["outcome"], r.get("message"), template)
            groups[(template, dtype, mode, reason, issue)].append(subject)
    key = "modules" if modules else "ops"

    def named(s: str) -> dict[str, Any]:
        return {"name": s, "exact": True} if (not modules and s in plain_ops) else {"name": s}

    def dtype_edits(d: str) -> dict[str, Any]:
        return {"include": [{"name": d}], "exclude": [{"name": x} for x in DTYPES if x != d]}

    tests: list[dict[str, Any]] = []
    for (template, dtype), subjects in sorted(passing.items()):
        tests.append({"names": [template], "edits": {key: {"include": [named(s) for s in sorted(subjects)]},
                                                      "dtypes": dtype_edits(dtype)}})
    for (template, dtype, mode, reason, issue), subjects in sorted(groups.items()):
        tests.append({"names": [template], "mode": mode, "reason": reason, "issue": issue,
                      "edits": {key: {"include": [named(s) for s in sorted(subjects)]}, "dtypes": dtype_edits(dtype)}})
    return {"test_suite_config": {
        "labels": ["modules" if modules else "opinfo", "generated"],
        "files": [{"source": "module_db" if modules else "op_db", "unlisted_test_mode": "skip",
                   "reason": "not measured on Spyre yet (new template or database entry; regenerate)",
                   "issue": "spyre-relay: regenerate with python -m test_specs.authoring.generate", "tests": tests}],
        "global": {"supported_dtypes": list(DTYPES), "input_config": {"max_samples": max_samples}},
    }}


HEADER = """# GENERATED by `python -m test_specs.authoring.generate` from a measured sweep on the simulated Spyre device
# (every item mandatory_success, then grouped by outcome; brought up to date with a run of the specs in their
# declared modes by `python -m test_specs.authoring.remeasure`).  Do not edit by hand: regenerate.
# Format: torch-spyre `test_suite_config` (RFC 1287) + spyre-relay superset (source, reason/issue,
# exact, input_config.max_samples).  Why each item is xfail/skip is stated in its entry's
# reason/issue: the Spyre support table (spyre_backend/support.yaml) or the measured result.
# Sample cap: input_config.max_samples = {n} sample inputs per item (upstream runs all; the cap
# bounds whole-database sweeps on 2 cores; see test_specs/templates/registry.py `capped`).
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-samples", type=int, default=4)
    a = ap.parse_args(argv)
    from test_specs.expand.universe import op_db

    counts = collections.Counter(op.name for op in op_db())
    plain_ops = {op.name for op in op_db() if not op.variant_test_name and counts[op.name] > 1}
    raw = gzip.decompress(a.results.read_bytes()) if a.results.suffix == ".gz" else a.results.read_bytes()
    rows = [json.loads(ln) for ln in raw.decode("utf-8").splitlines() if ln.strip()]
    for suite, modules in (("opinfo_all", False), ("modules", True)):
        mine = [r for r in rows if r["id"].startswith(suite + "::")]
        doc = build(mine, suite, modules=modules, max_samples=a.max_samples, plain_ops=plain_ops)
        text = HEADER.format(n=a.max_samples) + yaml.safe_dump(doc, sort_keys=False, width=110)
        (a.out / f"{suite}.yaml").write_text(text, encoding="utf-8")
        print(f"{suite}: {len(mine)} items, {len(doc['test_suite_config']['files'][0]['tests'])} entries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
