"""``relay select`` through the CLI in a subprocess: git diff on stdin, GitHub PR-files JSON,
design §4 JSON with reasons on every test, and the budget cut."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from selection.models import Selection
from tests.spec_text import compare_cpu_spec

SPEC = compare_cpu_spec(["add", "softmax", "mul"])

GIT_DIFF = """\
diff --git a/aten/src/ATen/native/SoftMax.cpp b/aten/src/ATen/native/SoftMax.cpp
index 1111111..2222222 100644
--- a/aten/src/ATen/native/SoftMax.cpp
+++ b/aten/src/ATen/native/SoftMax.cpp
@@ -10,3 +10,3 @@ TORCH_IMPL_FUNC(softmax_cpu_out)
   int64_t dim_ = maybe_wrap_dim(dim, input.dim());
-  auto x = input;
+  auto x = input.contiguous();
   return;
diff --git a/docs/source/nn.rst b/docs/source/nn.rst
index 3333333..4444444 100644
--- a/docs/source/nn.rst
+++ b/docs/source/nn.rst
@@ -1,1 +1,1 @@
-old
+new
"""

PR_FILES = [  # GitHub's GET /repos/{o}/{r}/pulls/{n}/files shape, extra keys included
    {"sha": "abc", "filename": "torch/_refs/__init__.py", "status": "modified", "additions": 1,
     "deletions": 1, "changes": 2, "blob_url": "https://github.com/x", "raw_url": "https://x",
     "contents_url": "https://x",
     "patch": "@@ -10,3 +10,3 @@ def mul(a, b):\n-    return a\n+    return a * b\n"},
]

YAML = """\
- func: _softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU: softmax_cpu_out
"""


def relay(*args: str, tmp: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RELAY_STATE_DIR": str(tmp / "state"), "COLUMNS": "200"}
    env.pop("RELAY_DATABASE_URL", None)
    return subprocess.run([sys.executable, "-m", "relay.cli", "select", *args,
                           "--spec", str(tmp / "mini.yaml"), "--source-root", str(tmp / "tree")],
                          input=stdin, env=env, capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parents[2])


def test_select_cli_diff_files_json_and_budget(tmp_path: Path) -> None:
    (tmp_path / "mini.yaml").write_text(SPEC)
    native = tmp_path / "tree/aten/src/ATen/native"
    native.mkdir(parents=True)
    (native / "native_functions.yaml").write_text(YAML)

    out = relay("--diff", "-", "--json", tmp=tmp_path, stdin=GIT_DIFF)
    assert out.returncode == 0, out.stderr
    sel = Selection.model_validate_json(out.stdout)  # design §4, invariants checked
    assert sel.universe >= 3  # 3 ops x the dtypes op_db lists (unsupported ones skip)
    assert {t.op for t in sel.selected} == {"softmax"}
    assert [t.id for t in sel.to_run] == [  # the impacted op's OpInfo variants too (issue 13)
        "mini::TestCommon::test_compare_cpu[softmax-float16]",
        "mini::TestCommon::test_compare_cpu[softmax.with_dtype-float16]"]
    assert all(t.reasons for t in sel.selected)
    assert any("aten::_softmax" in r for r in sel.selected[0].reasons)
    assert [s.name for s in sel.stages] == ["scope", "memory", "classify"]

    files = tmp_path / "pr-files.json"
    files.write_text(json.dumps(PR_FILES))
    out = relay("--files", str(files), "--budget-minutes", "0", tmp=tmp_path)  # human output
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""  # tables and notes go to stderr only
    assert "mode: pr" in out.stderr and "budget" in out.stderr and "(0 to run)" in out.stderr
    assert "cut 1 lower-ranked" in out.stderr  # the mul test was selected, then cut

    bad = relay("--files", str(files), "--diff", "-", tmp=tmp_path, stdin="")
    assert bad.returncode == 2 and "exactly one" in bad.stderr
