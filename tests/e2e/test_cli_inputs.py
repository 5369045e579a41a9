"""What users hand the CLI: ``--spec`` directories and JSON locations in input errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relay.changes.inputs import InputError, changeset_from_pr_files, json_location, load_changeset, spec_files
from tests.e2e.test_replay_cli import relay


def _write(path: Path, data: object) -> str:
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize(("item", "kind"), [(3, "a number"), ("x.py", "a string"), (None, "null"),
                                            ([], "an array"), (True, "a boolean")])
def test_pr_files_non_object_item_is_reported_by_index(tmp_path: Path, item: object, kind: str) -> None:
    source = _write(tmp_path / "files.json", [{"filename": "a.py", "status": "modified"}, item])
    with pytest.raises(InputError) as info:
        changeset_from_pr_files(source)
    assert str(info.value) == f"{source}: [1]: expected an object (a PR file), got {kind}"


def test_pr_files_field_errors_and_changeset_errors_give_json_paths(tmp_path: Path) -> None:
    source = _write(tmp_path / "files.json", [{"filename": "a.py", "status": "modified"}, {"status": "modified"}])
    with pytest.raises(InputError, match=r"files\.json: \[1\]\.filename: Field required$"):
        changeset_from_pr_files(source)
    source = _write(tmp_path / "cs.json", {"base": "a", "head": "b", "files": [{"filename": "a.py"}, 3]})
    with pytest.raises(InputError, match=r"cs\.json: files\.1: "):
        load_changeset(source)
    assert json_location(()) == "<root>" and json_location(("files", 0, "patch")) == "files.0.patch"


def test_spec_files_expands_directories_and_names_bad_paths(tmp_path: Path, op_db_spec) -> None:
    a = op_db_spec("a", ["add"])
    sub = tmp_path / "more"
    sub.mkdir()
    b = sub / "b.yml"
    b.write_text(a.read_text())
    (tmp_path / "notes.txt").write_text("not a spec")
    assert spec_files([tmp_path]) == [a, b]
    assert spec_files([a, tmp_path]) == [a, b]  # a file given twice counts once
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="empty: a directory with no spec files"):
        spec_files([empty])
    with pytest.raises(InputError, match="nope.yaml: no such spec file or directory"):
        spec_files([tmp_path / "nope.yaml"])


def test_a_broken_yaml_symlink_in_a_spec_directory_is_an_error_naming_it(tmp_path: Path, op_db_spec) -> None:
    """A spec directory whose ``gone.yaml`` points nowhere: silently skipping it would drop its
    tests from every run; the error names the link and its target."""
    a = op_db_spec("a", ["add"])
    (tmp_path / "gone.yaml").symlink_to(tmp_path / "moved-away.yaml")
    (tmp_path / "notes.txt").symlink_to(tmp_path / "nowhere.txt")  # not a spec name: ignored
    with pytest.raises(InputError, match=r"gone\.yaml: a broken symlink \(its target .*moved-away\.yaml "
                                         r"does not exist\)$"):
        spec_files([tmp_path])
    (tmp_path / "gone.yaml").unlink()
    assert spec_files([tmp_path]) == [a]


def test_cli_select_and_replay_take_a_spec_directory(tmp_path: Path, op_db_spec, softmax_change) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    op_db_spec("one", ["softmax"], exclude=["softmax.with_dtype"]).rename(specs / "one.yaml")
    op_db_spec("two", ["add", "mul"]).rename(specs / "two.yaml")
    state = tmp_path / "state"
    sel = relay("select", "--changes", str(softmax_change), "--spec", str(specs), "--json", state=state, cwd=tmp_path)
    assert sel.returncode == 0, sel.stderr[-2000:]
    assert json.loads(sel.stdout)["universe"] == 3  # both files of the directory

    empty = tmp_path / "empty"
    empty.mkdir()
    for cmd in (["replay", str(softmax_change)], ["select", "--changes", str(softmax_change)]):
        proc = relay(*cmd, "--spec", str(empty), state=state, cwd=tmp_path)
        assert proc.returncode == 2 and "a directory with no spec files" in proc.stderr, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr

    files = _write(tmp_path / "files.json", [{"filename": "torch/_refs/__init__.py", "status": "modified"}, 3])
    bad = relay("select", "--files", files, "--spec", str(specs), state=state, cwd=tmp_path)
    assert bad.returncode == 2 and "[1]: expected an object (a PR file), got a number" in bad.stderr, bad.stderr
    assert "<root>" not in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.timeout(300)
def test_replay_runs_a_spec_directory(tmp_path: Path, op_db_spec, softmax_change) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    op_db_spec("one", ["softmax"], exclude=["softmax.with_dtype"]).rename(specs / "one.yaml")
    op_db_spec("two", ["add"]).rename(specs / "two.yaml")
    proc = relay("replay", str(softmax_change), "--spec", str(specs), "--json", state=tmp_path / "state", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = json.loads(proc.stdout)
    assert run["universe"] == 2
    expected = {"one::TestCommon::test_compare_cpu[softmax-float16]": "passed"}
    assert {r["id"]: r["outcome"] for r in run["results"]} == expected


def test_specs_check_and_spec_files_refuse_what_is_not_a_spec(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from relay.cli import app

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        spec_files([Path("/dev/null")])
    for target, why in ((empty, "no spec files"), (Path("/dev/null"), "not a spec file")):
        result = CliRunner().invoke(app, ["specs", "check", str(target)])
        assert result.exit_code == 2 and why in result.stderr
    ok = CliRunner().invoke(app, ["specs", "check"])  # the bundled specs, from the package
    assert ok.exit_code == 0 and "3 spec file(s) OK" in ok.stderr


def _serve(port: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    return subprocess.run([sys.executable, "-m", "relay.cli", "serve", "--port", port],
                          env=base | {"RELAY_WEBHOOK_SECRET": "a-long-enough-secret-value",
                                      "RELAY_STATE_DIR": str(cwd / "state")} | env,
                          cwd=cwd, capture_output=True, text=True, timeout=60)


def test_serve_refuses_to_start_on_settings_every_delivery_would_fail_on(tmp_path: Path) -> None:
    """``relay serve`` with RELAY_SPECS that do not parse or do not exist, a database URL that is
    no URL, an unusable state directory or a port out of range: exit 2 with the setting named,
    no traceback, before anything listens (a relay that starts would fail every delivery)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("test_suite_config:\n  bogus_key: 1\n")
    cases = [({"RELAY_SPECS": str(bad)}, f"{bad}:2:3: unknown key 'bogus_key'"),
             ({"RELAY_SPECS": str(tmp_path / "nothere.yaml")}, "RELAY_SPECS: "),
             ({"RELAY_DATABASE_URL": "notaurl"}, "RELAY_DATABASE_URL: Could not parse"),
             ({"RELAY_STATE_DIR": "/proc/no-such-dir"}, "RELAY_STATE_DIR /proc/no-such-dir: ")]
    for env, words in cases:
        done = _serve("8099", env, tmp_path)
        assert done.returncode == 2 and words in done.stderr, (env, done.stderr)
        assert "Traceback" not in done.stderr
    port = _serve("99999", {}, tmp_path)
    assert port.returncode == 2 and "--port" in port.stderr
