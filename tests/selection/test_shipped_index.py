"""The shipped test → aten-op index (issues 28/29): a fresh state starts from it, entries are
kept per test id (a spec mode change keeps them; another torch or capture format drops them),
``regenerate --check`` says what is stale, and regeneration captures only that."""

from __future__ import annotations

from pathlib import Path

import pytest

from selection.index import op_index, regenerate, shipped
from selection.index.op_index import CAPTURE_FORMAT, TestOpIndex
from tests.selection.conftest import item


@pytest.fixture
def data(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setattr(shipped, "DATA", tmp_path / "data")
    return tmp_path / "data"


def test_read_is_per_torch_and_format(data: Path) -> None:
    shipped.write_shipped("spyre", "2.13.0+cpu", CAPTURE_FORMAT, {"b": ["aten::mm"], "a": ["aten::add"]}, {"c": "E"})
    assert shipped.read_shipped("spyre", "2.13.0+cpu", CAPTURE_FORMAT) == (
        {"a": ["aten::add"], "b": ["aten::mm"]}, {"c": "E"})
    assert shipped.read_shipped("spyre", "2.14.1", CAPTURE_FORMAT) == ({}, {})
    assert shipped.read_shipped("spyre", "2.13.0+cpu", CAPTURE_FORMAT + 1) == ({}, {})
    assert shipped.read_shipped("cpu", "2.13.0+cpu", CAPTURE_FORMAT) == ({}, {})
    first = shipped.data_path("spyre").read_bytes()
    shipped.write_shipped("spyre", "2.13.0+cpu", CAPTURE_FORMAT, {"a": ["aten::add"], "b": ["aten::mm"]}, {"c": "E"})
    assert shipped.data_path("spyre").read_bytes() == first  # same entries, same bytes


def test_a_fresh_state_starts_from_the_shipped_index(data: Path, tmp_path: Path, monkeypatch) -> None:
    add, mul = item("add"), item("mul", mode="xfail", reason="a mode change keeps the id")
    shipped.write_shipped("spyre", op_index.torch_version(), CAPTURE_FORMAT, {add.id: ["aten::add"]}, {})
    captured: list[str] = []

    def capture(it, device):
        captured.append(it.id)
        return ["aten::mul"]

    monkeypatch.setattr(op_index, "capture_ops", capture)
    monkeypatch.setattr(op_index, "_opinfo_table", lambda: {"add": object(), "mul": object()})
    index = TestOpIndex.build([add, mul], device="spyre", cache_dir=tmp_path / "cache")
    assert captured == [mul.id]  # only what the shipped index lacks
    assert index.entries == {add.id: ["aten::add"], mul.id: ["aten::mul"]}
    captured.clear()
    TestOpIndex.build([add, mul], device="spyre", cache_dir=None, shipped=False)
    assert captured == [add.id, mul.id]


def test_check_lists_stale_ids_and_regenerate_fills_them_from_the_cache(data: Path, tmp_path: Path,
                                                                       monkeypatch, capsys) -> None:
    add, mul = item("add"), item("mul")
    monkeypatch.setattr("test_specs.expand.universe.expand", lambda specs=None: [add, mul])
    torch = op_index.torch_version()
    shipped.write_shipped("spyre", torch, CAPTURE_FORMAT, {add.id: ["aten::add"], "gone": ["aten::x"]}, {})
    assert regenerate.main(["--check"]) == 1
    assert f"stale: {mul.id}" in capsys.readouterr().out
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"op_index-v{CAPTURE_FORMAT}-{torch}-spyre.json").write_text(f'{{"{mul.id}": ["aten::mul"]}}')
    assert regenerate.main(["--cache", str(cache)]) == 0
    assert shipped.read_shipped("spyre", torch, CAPTURE_FORMAT)[0] == {add.id: ["aten::add"], mul.id: ["aten::mul"]}
    assert regenerate.main(["--check"]) == 0


def test_the_shipped_index_is_current_for_the_bundled_specs() -> None:
    """``python -m selection.index.regenerate --check`` on the committed file: a spec that adds
    items, or a capture-format bump, fails here until the file is regenerated."""
    torch = op_index.torch_version()
    if shipped.read_shipped("spyre", torch, CAPTURE_FORMAT) == ({}, {}):
        pytest.fail(f"no shipped index for torch {torch} and capture format {CAPTURE_FORMAT}: "
                    "run python -m selection.index.regenerate")
    assert regenerate.main(["--check"]) == 0
