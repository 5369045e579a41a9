"""Issue 17: ``relay specs check`` answers a giant integer and an oversized YAML file with a
``file:line:col: message`` and exit 1 — never a traceback, never minutes of parsing."""

from __future__ import annotations

import sys
from pathlib import Path

from typer.testing import CliRunner

from relay.cli import app
from test_specs.format.loader import parse_spec
from test_specs.format.yamlmarks import MAX_YAML_BYTES, load_yaml

BUNDLED = Path(__file__).resolve().parents[2] / "test_specs" / "specs"


def test_an_integer_past_pythons_digit_limit_is_an_error_at_its_mark(tmp_path: Path) -> None:
    digits = sys.get_int_max_str_digits() + 1
    spec = tmp_path / "bigint.yaml"
    spec.write_text("test_suite_config:\n  global:\n    supported_dtypes: " + "9" * digits + "\n")
    result = CliRunner().invoke(app, ["specs", "check", str(spec)])
    assert result.exit_code == 1
    assert f"{spec}:3:23: integer of {digits:,} digits" in result.output
    assert "Traceback" not in result.output
    data, _, problems = load_yaml("n: " + "1" * (digits - 1))  # at the limit: still a number
    assert problems == [] and data["n"] % 10 == 1


def test_a_yaml_file_over_the_cap_is_refused_before_parsing(tmp_path: Path) -> None:
    spec = tmp_path / "huge.yaml"
    line = "  - a\n"
    spec.write_text("test_suite_config:\n  files:\n" + line * (MAX_YAML_BYTES // len(line) + 1))
    _, errors = parse_spec(spec)  # refused on its size: nothing is parsed
    assert [(e.line, e.col) for e in errors] == [(1, 1)]
    assert errors[0].message.startswith(f"spec too large: {spec.stat().st_size:,} bytes of YAML")
    result = CliRunner().invoke(app, ["specs", "check", str(spec)])
    assert result.exit_code == 1 and f"{spec}:1:1: spec too large" in result.output


def test_the_biggest_bundled_spec_is_under_the_cap() -> None:
    biggest = max(p.stat().st_size for p in BUNDLED.glob("*.yaml"))
    assert biggest < MAX_YAML_BYTES / 1.5, "raise MAX_YAML_BYTES with a measured reason"
