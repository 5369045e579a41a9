"""ChangeSet building from trees, wheels and git revisions; error handling."""

from __future__ import annotations

import logging
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from relay.changes import ChangeSourceError, WheelSource, build_changeset, describe_source, diff_sources
from selection.models import ChangeSet
from tests.changes.changes_helpers import NEW, OLD, write_tree, write_wheel

EXPECTED = [
    ("pkg/data.bin", "modified", None),
    ("pkg/gone.py", "removed", ["Old", "Old.m", "old_only"]),
    ("pkg/mod.py", "modified", ["f"]),
    ("pkg/new.py", "added", ["VALUE", "h"]),
]


def summary(cs: ChangeSet) -> list[tuple[str, str, list[str] | None]]:
    return [(f.filename, f.status, f.symbols) for f in cs.files]


def test_trees(trees: tuple[Path, Path]) -> None:
    cs = build_changeset(*trees, title="t")
    assert summary(cs) == EXPECTED
    assert (cs.base, cs.head, cs.title, cs.upstream) == ("old", "new", "t", "pytorch/pytorch")
    assert all(f.patch is None for f in cs.files)


def test_wheels(wheels: tuple[Path, Path]) -> None:
    cs = build_changeset(str(wheels[0]), str(wheels[1]), upstream="me/demo")
    assert summary(cs) == EXPECTED  # dist-info (METADATA, WHEEL, RECORD) is not listed
    assert (cs.base, cs.head, cs.upstream) == ("demo==1.0", "demo==1.1", "me/demo")
    ChangeSet.model_validate_json(cs.model_dump_json(exclude_none=True))


def test_wheel_against_tree(wheels: tuple[Path, Path], tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "t", NEW)
    assert summary(build_changeset(wheels[0], tree)) == EXPECTED


def test_wheel_uses_record_hashes(tmp_path: Path) -> None:
    # identical content but RECORD says otherwise: RECORD is trusted, nothing is decompressed
    a = write_wheel(tmp_path / "a.whl", {"m.py": "x = 1\n"})
    b = write_wheel(tmp_path / "b.whl", {"m.py": "x = 1\n"}, lie_in_record={"m.py": b"x = 2\n"})
    assert summary(build_changeset(a, b)) == [("m.py", "modified", [])]


def test_wheel_without_record_or_entry_falls_back_to_content(tmp_path: Path) -> None:
    files = {"m.py": "x = 1\n", "n.txt": "n"}
    a = write_wheel(tmp_path / "a.whl", files, record=False)
    b = write_wheel(tmp_path / "b.whl", files, omit_from_record=("n.txt",))
    c = write_wheel(tmp_path / "c.whl", {**files, "n.txt": "N"}, omit_from_record=("n.txt",))
    assert build_changeset(a, b).files == []
    assert summary(build_changeset(a, c)) == [("n.txt", "modified", None)]


def test_data_dirs_and_directory_entries(tmp_path: Path) -> None:
    a = write_wheel(tmp_path / "a.whl", {"demo-1.0.data/purelib/p.py": "x = 1\n",
                                         "demo-1.0.data/scripts/run": "#!/bin/sh\n"})
    b = write_wheel(tmp_path / "b.whl", {"demo-1.1.data/purelib/p.py": "x = 2\n",
                                         "demo-1.1.data/scripts/run": "#!/bin/sh\n"})
    with zipfile.ZipFile(b, "a") as zf:
        zf.writestr("pkg/", b"")
    assert summary(build_changeset(a, b)) == [("p.py", "modified", ["x"])]


def test_tree_skips_metadata_and_bytecode(trees: tuple[Path, Path]) -> None:
    old, new = trees
    write_tree(new, {"demo-1.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: Demo\n"
                     "Version: 1.1+cpu\n", "pkg/__pycache__/mod.cpython-311.pyc": b"\x00",
                     "pkg/x.pyc": b"\x00"})
    cs = build_changeset(old, new)
    assert summary(cs) == EXPECTED
    assert cs.head == "demo==1.1"
    assert describe_source(new, keep_local=True) == "demo==1.1+cpu"


def test_parse_error_survives_with_note(trees: tuple[Path, Path],
                                        caplog: pytest.LogCaptureFixture) -> None:
    old, new = trees
    (new / "pkg" / "mod.py").write_text("def f(:\n")
    with caplog.at_level(logging.WARNING):
        report = diff_sources(old, new)
    mod = next(f for f in report.changeset.files if f.filename == "pkg/mod.py")
    assert mod.status == "modified" and mod.symbols is None
    assert report.notes and report.notes[0].startswith("pkg/mod.py: symbols not computed")
    assert "pkg/mod.py" in caplog.text
    assert report.counts["python_unparsed"] == 1


def test_parallel_path_matches_serial(trees: tuple[Path, Path]) -> None:
    assert diff_sources(*trees, jobs=2).changeset == diff_sources(*trees, jobs=1).changeset


def test_output_has_no_content(trees: tuple[Path, Path]) -> None:
    text = build_changeset(*trees).model_dump_json()
    assert "return x" not in text and "patch" in text  # the key, always null


@pytest.mark.parametrize("make", ["missing", "text", "badzip", "at"])
def test_bad_paths_raise(tmp_path: Path, make: str, trees: tuple[Path, Path]) -> None:
    bad = tmp_path / "bad.whl"
    if make == "text":
        bad = tmp_path / "notes.txt"
        bad.write_text("hello")
    elif make == "badzip":
        bad.write_bytes(b"PK\x03\x04 not really")
    elif make == "at":
        bad = tmp_path / "nowhere@v1"
    with pytest.raises(ChangeSourceError) as err:
        build_changeset(trees[0], bad)
    assert str(bad) in str(err.value)
    assert isinstance(err.value, ValueError)
    with pytest.raises(ChangeSourceError):
        build_changeset(bad, trees[0])


def test_wheel_source_lists_install_paths(wheels: tuple[Path, Path]) -> None:
    with WheelSource(wheels[0]) as src:
        assert sorted(src.entries()) == sorted(OLD)
        assert src.read("pkg/same.txt") == b"same\n"
        with pytest.raises(ChangeSourceError):
            src.read("nope")


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git_revisions(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                               "user.email=t@t", *args], check=True, capture_output=True,
                              text=True).stdout.strip()

    git("init", "-q")
    write_tree(repo, OLD)
    git("add", "-A")
    git("commit", "-q", "-m", "old")
    git("tag", "v1")
    for rel in OLD:
        (repo / rel).unlink()
    write_tree(repo, NEW)
    git("add", "-A")
    git("commit", "-q", "-m", "new")
    cs = build_changeset(f"{repo}@v1", f"{repo}@HEAD")
    assert summary(cs) == EXPECTED
    assert cs.head == git("rev-parse", "HEAD")
    # git against a tree: digests of different kinds fall back to content hashes
    assert summary(build_changeset(f"{repo}@v1", write_tree(tmp_path / "t", NEW))) == EXPECTED
    with pytest.raises(ChangeSourceError, match="nope"):
        build_changeset(f"{repo}@nope", f"{repo}@HEAD")
