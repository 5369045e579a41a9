"""The labels of the shared-machinery selection cases, from what the tests execute (issue 32).

Their ``must_select`` used to name the ops ``selection/policy/canary.py`` tries first in each op
family (``add``, ``exp``, ``sum`` …), so ``bench/selection_eval.py`` checked the canary rule
against itself.  The rule for these labels now comes from execution, not from the selector: a
change to shared machinery (type promotion, ``TensorIterator``, dispatch stubs, ``c10/core``,
``assert_close`` …) can break any op, and the tests that notice it are the ones that execute the
op it breaks — most likely the aten ops that the most tests execute.  So such a case must select
a test of each of the ``--top`` OpInfos whose own aten op (``nn.functional.gelu`` →
``aten::gelu``) can be broken by the file and is executed by the most spec items of the
universe.  Which ops a file can break is PyTorch's fact, not the selector's: ``TensorIterator``,
dispatch stubs, ``cpu/Loops.h`` and the scalar-type promotion they apply reach the kernels whose
``native_functions.yaml`` entry is ``structured_inherits: TensorIteratorBase`` (the installed
torchgen copy); ``c10/core/TensorImpl``, ``_prims_common`` and the test machinery reach every op.
The executed ops are counted in the test →
aten-op index that ``selection/index/op_index.py`` captures over the bundled specs (issue 28's
device trace of every test had not landed on main when these labels were made; rerun this with
``--state-dir`` holding that trace's index once it has).  ``failures`` is the first of them.

Relabelled: every case whose files are all shared machinery (``canary.is_shared_machinery``: the
files that route to canaries) and name no changed symbol or hunk — a case that names the changed
function (``elementwise_dtypes`` → ``add``) keeps its hand-made label of that function's callers.

Run: ``.venv/bin/python bench/label_machinery.py [--state-dir .relay] [--top 4] [--write]``
(captures the index on a first run: minutes; prints the counts and the labels, ``--write``
rewrites the cases).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from fnmatch import fnmatchcase
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from selection_eval import aten_name  # noqa: E402

from selection.policy.canary import is_shared_machinery  # noqa: E402

CASES = ROOT / "bench" / "cases"
#: machinery that reaches only the TensorIterator kernels (the rest reaches every op)
TENSOR_ITERATOR_MACHINERY = ("aten/src/ATen/TensorIterator*", "aten/src/ATen/native/TensorIterator*",
                             "aten/src/ATen/native/DispatchStub.*", "aten/src/ATen/native/cpu/Loops.h",
                             "c10/core/ScalarType.h", "aten/src/ATen/native/TypeProperties.*")
LABELLED_FROM = ("op index (selection/index/op_index.py) over the bundled specs: the OpInfos whose aten "
                 "op the most spec items execute (bench/label_machinery.py)")


def machinery_cases(cases_dir: Path = CASES) -> list[Path]:
    """Cases whose every file is shared machinery, named without symbols or patches."""
    out = []
    for path in sorted(cases_dir.glob("*.json")):
        files = json.loads(path.read_text())["changeset"]["files"]
        if files and all(is_shared_machinery(f["filename"]) and not f.get("symbols") and not f.get("patch")
                         for f in files):
            out.append(path)
    return out


def tensor_iterator_ops() -> frozenset[str]:
    """``aten::<name>`` of every ``structured_inherits: TensorIteratorBase`` entry of the installed
    ``native_functions.yaml``."""
    import torchgen
    import yaml

    path = Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    entries = yaml.safe_load(path.read_text())
    return frozenset("aten::" + e["func"].split("(")[0].split(".")[0] for e in entries
                     if e.get("structured_inherits") == "TensorIteratorBase")


def reachable(files: list[str], ti_ops: frozenset[str]) -> frozenset[str] | None:
    """The aten ops a change of ``files`` can break: ``ti_ops`` when every file is TensorIterator
    machinery, ``None`` (every op) otherwise."""
    if all(any(fnmatchcase(f, p) for p in TENSOR_ITERATOR_MACHINERY) for f in files):
        return ti_ops
    return None


def most_executed(entries: dict[str, list[str]], subjects: dict[str, str], top: int,
                  among: frozenset[str] | None = None) -> list[tuple[str, int]]:
    """``top`` (OpInfo name, items executing its aten op), most executed first, only OpInfos
    whose aten op is in ``among`` (``None``: all); ``entries`` is the index (item id → aten
    ops), ``subjects`` item id → its OpInfo name (items without one are left out).  Ties break
    by name, so the labels are deterministic."""
    executed = Counter(op for ops in entries.values() for op in set(ops))
    names: dict[str, list[str]] = {}
    for name in sorted(set(subjects.values())):
        if among is None or aten_name(name) in among:
            names.setdefault(aten_name(name), []).append(name)
    ranked = sorted(((n, executed[a]) for a, ns in names.items() for n in ns if executed[a]),
                    key=lambda x: (-x[1], x[0]))
    return ranked[:top]


def load_index(state_dir: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    from relay.pipeline.specs import default_specs, load_items
    from selection.index.op_index import TestOpIndex

    items = load_items(default_specs())
    index = TestOpIndex.build(items, device="spyre", cache_dir=state_dir / "index")
    subjects = {i.id: i.op for i in items if i.op and not i.module}
    return index.entries, subjects


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dir", type=Path, default=ROOT / ".relay")
    parser.add_argument("--top", type=int, default=4)
    parser.add_argument("--write", action="store_true", help="rewrite the cases' labels")
    args = parser.parse_args(argv)
    entries, subjects = load_index(args.state_dir)
    ti_ops = tensor_iterator_ops()
    print(f"{len(entries)} indexed items, {len(ti_ops)} TensorIterator ops")
    for path in machinery_cases():
        case = json.loads(path.read_text())
        among = reachable([f["filename"] for f in case["changeset"]["files"]], ti_ops)
        ranked = most_executed(entries, subjects, args.top, among)
        labels = [n for n, _ in ranked]
        print(f"{case['name']} ({'TensorIterator ops' if among else 'every op'}): {case.get('must_select')} -> "
              + ", ".join(f"{n} ({c} items)" for n, c in ranked))
        if args.write:
            case.update(must_select=labels, failures=labels[:1], labelled_from=LABELLED_FROM)
            path.write_text(json.dumps(case, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
