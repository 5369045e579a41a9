"""Native kernels from an upstream checkout (issue 13): without a patch, a changed native file is
attributed to the kernels it defines at the change's head, read with real ``git show``."""

from __future__ import annotations

from pathlib import Path

from relay.changes.git import file_reader
from selection.attribution.native import NativeDefinitions
from selection.attribution.rules import OpCatalog, attribute
from selection.attribution.source_map import SourceMap
from selection.models import ChangedFile
from tests.fakes.upstream_git import git

YAML = """\
- func: _softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU: softmax_cpu_out
- func: flip(Tensor self, int[] dims) -> Tensor
  dispatch:
    CPU: flip
"""
PATH = "aten/src/ATen/native/Qwerty.cpp"


def test_a_native_file_without_a_patch_reads_its_kernels_at_head(tmp_path: Path) -> None:
    repo = tmp_path / "pytorch"
    (repo / "aten/src/ATen/native").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / PATH).write_text("Tensor flip(const Tensor& self, IntArrayRef dims) {\n  return self;\n}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    (repo / PATH).write_text("TORCH_IMPL_FUNC(softmax_cpu_out) (\n) {}\n")
    git(repo, "commit", "-qam", "two")
    base, head = git(repo, "rev-list", "--reverse", "HEAD").split()

    tree = tmp_path / "tree/aten/src/ATen/native"
    tree.mkdir(parents=True)
    (tree / "native_functions.yaml").write_text(YAML)
    sm = SourceMap.from_root(tmp_path / "tree")
    defs = NativeDefinitions(file_reader(repo), tmp_path / "cache")
    catalog = OpCatalog(aten_ops=frozenset({"aten::_softmax", "aten::flip"}), opinfos={}, source_map=sm,
                        definitions=defs)
    at_head = attribute(ChangedFile(filename=PATH), catalog, head)
    at_base = attribute(ChangedFile(filename=PATH), catalog, base)
    assert at_head.aten_ops == {"aten::_softmax"} and at_base.aten_ops == {"aten::flip"}
    assert f"defines at {head[:12]}" in at_head.reasons[0]
    assert file_reader(repo)(head, "no/such/file.cpp") is None
    assert file_reader(tmp_path / "not-a-repo")(head, PATH) is None
    # no checkout and a name no rule knows: not attributable (canaries), never a guess
    bare = OpCatalog(aten_ops=catalog.aten_ops, opinfos={}, source_map=sm)
    assert attribute(ChangedFile(filename=PATH), bare, head).canary
