"""Loader: marks, duplicate keys, unknown keys, every error at once, strict mode, plain configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_specs.authoring.check import check_specs
from test_specs.format.loader import SpecError, SpecLoadError, load_spec
from test_specs.format.yamlmarks import load_yaml


def test_marks_map_paths_to_lines_and_columns() -> None:
    data, marks, problems = load_yaml("a: 1\nb:\n  - x: 2\n    y: [3]\n")
    assert data == {"a": 1, "b": [{"x": 2, "y": [3]}]}
    assert problems == []
    assert (marks[("b", 0, "x")].key.line, marks[("b", 0, "x")].key.col) == (3, 5)
    assert (marks[("b", 0, "y", 0)].value.line, marks[("b", 0, "y", 0)].value.col) == (4, 9)


def test_duplicate_keys_are_reported_at_the_second_key(fixtures: Path) -> None:
    errors = check_specs([fixtures / "specs_broken" / "broken_dupkey.yaml"])
    assert [(e.line, e.col) for e in errors] == [(8, 11), (9, 3)]
    assert "duplicate key 'mode' (first defined at line 7)" in errors[0].message
    assert "duplicate key 'labels'" in errors[1].message


def test_schema_errors_all_reported_with_positions(fixtures: Path) -> None:
    errors = check_specs([fixtures / "specs_broken" / "broken_schema.yaml"])
    got = {(e.line, e.col): e.message for e in errors}
    assert "unknown key 'mdoe'" == got[(8, 11)]
    assert "unknown key 'colour'" == got[(12, 31)]
    assert "unlisted_test_mode" in got[(5, 27)]
    assert "unknown dtype 'float17'" in got[(14, 33)]
    assert len(errors) == 4


def test_check_specs_reports_every_file_at_once_sorted(fixtures: Path, fault_templates: str) -> None:
    errors = check_specs([fixtures / "specs_broken"])
    files = {Path(e.file).name for e in errors}
    assert files == {"broken_dupkey.yaml", "broken_schema.yaml", "broken_semantic.yaml", "broken_syntax.yaml"}
    assert errors == sorted(errors)
    sem = [e for e in errors if e.file.endswith("broken_semantic.yaml")]
    assert {(e.line, e.col) for e in sem} == {(5, 49), (10, 26), (11, 18)}
    assert any("unknown op 'no_such_op'" in e.message for e in sem)
    assert any("unknown op template 'TestCommon::test_nothing'" in e.message for e in sem)
    assert any("already produced by an earlier test entry" in e.message for e in sem)
    syntax = [e for e in errors if e.file.endswith("broken_syntax.yaml")]
    assert syntax[0].line == 3 and "YAML syntax error" in syntax[0].message


def test_spec_error_format() -> None:
    assert SpecError("a.yaml", 3, 7, "boom").format() == "a.yaml:3:7: boom"


def test_load_spec_raises_with_all_errors(fixtures: Path) -> None:
    with pytest.raises(SpecLoadError) as ei:
        load_spec(fixtures / "specs_broken" / "broken_schema.yaml")
    assert len(ei.value.errors) == 4
    assert "broken_schema.yaml:8:11: unknown key 'mdoe'" in str(ei.value)


def test_plain_torch_spyre_config_loads_unchanged(fixtures: Path) -> None:
    spec = load_spec(fixtures / "plain_torch_spyre.yaml")
    cfg = spec.config
    assert cfg.labels == ["regression"]
    f0 = cfg.files[0]
    assert f0.path == "${TORCH_ROOT}/test/test_binary_ufuncs.py" and f0.unlisted_test_mode == "skip"
    t0 = f0.tests[0]
    assert t0.mode == "xfail" and t0.tags == ["model_1", "model_2"]
    assert [n.name for n in t0.edits.ops.include] == ["add"]
    assert [n.name for n in t0.edits.functions.cpu_move] == ["assertEqual", "assertTrue"]
    assert f0.tests[1].mode == "mandatory_success"  # the default
    assert cfg.files[1].path.endswith("test_*.py")
    g = cfg.global_
    assert [d.name for d in g.supported_dtypes] == ["float16", "int64", "float32"]
    assert g.dtype("float32").force_xfail
    add = g.op("add")
    assert add.precision("float16").atol == 1e-3 and add.precision("int64") is None
    assert g.op("gcd").force_xfail
    assert check_specs([fixtures / "plain_torch_spyre.yaml"]) == []


def test_strict_mode_requires_a_reason(fixtures: Path) -> None:
    errors = check_specs([fixtures / "plain_torch_spyre.yaml"], strict=True)
    tail = " needs a reason: a 'reason' or 'issue' key, or a YAML comment on or above the entry (strict mode)"
    assert [(e.line, e.message) for e in errors] == [
        (12, "mode xfail" + tail),
        (54, "force_xfail on dtype 'float32'" + tail),
        (66, "force_xfail on op 'gcd'" + tail),
    ]


def test_file_needs_path_or_source(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text("test_suite_config:\n  files:\n    - unlisted_test_mode: skip\n")
    (err,) = check_specs([p])
    assert err.line == 3 and "exactly one of 'path' or 'source'" in err.message


def test_not_a_spec(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text("foo: 1\n")
    (err,) = check_specs([p])
    assert "test_suite_config" in err.message


def test_alias_bomb_recursive_alias_and_binary_files_are_errors(tmp_path):
    from test_specs.authoring.check import check_specs

    (tmp_path / "rec.yaml").write_text("a: &x [*x]\n")
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00")
    lines = ['a: &a ["lol", "lol"]']
    for prev, name in zip("abcdefg", "bcdefgh", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    (tmp_path / "bomb.yaml").write_text("\n".join(lines + ["test_suite_config: {files: *h}"]) + "\n")
    msgs = {e.format().split(":")[0].rsplit("/", 1)[-1]: e.format() for e in check_specs([tmp_path])}
    assert "recursive YAML alias" in msgs["rec.yaml"]
    assert "not UTF-8" in msgs["bin.yaml"]
    assert "aliases" in msgs["bomb.yaml"]
