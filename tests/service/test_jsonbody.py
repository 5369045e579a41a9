from __future__ import annotations

import pytest

from relay.envs.environments import EnvironmentError_, validate
from relay.reporting.models import Workflow
from relay.service.jsonbody import parse_json_body


@pytest.mark.parametrize(("raw", "why"), [
    (b"\xef\xbb\xbf{}", "byte-order mark"),
    ('{"a": 1}'.encode("utf-16"), "not UTF-8"),
    (b'{"a": Infinity}', "Infinity"),
    (b'{"a": NaN}', "NaN"),
    (b"[" * 100000 + b"]" * 100000, "nests too deeply"),
    (b"{nope", "not valid JSON"),
])
def test_bodies_refused_with_a_reason(raw: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_json_body(raw)


def test_plain_utf8_json_parses_to_value_and_text() -> None:
    assert parse_json_body('{"é": 1}'.encode()) == ({"é": 1}, '{"é": 1}')


@pytest.mark.parametrize("field", [{"run_attempt": 10**30}, {"run_id": "x" * 101}, {"job_name": "j" * 201}])
def test_hud_workflow_bounds_match_the_columns(field: dict) -> None:
    with pytest.raises(ValueError):
        Workflow.model_validate({"status": "completed", "run_id": 1, "name": "w", **field})


@pytest.mark.parametrize("text", ["garbage!!", "current+faults=xx", "/nonexistent/torch-1.0-py3-none-any.whl"])
def test_environments_are_validated_without_building(text: str) -> None:
    with pytest.raises(EnvironmentError_):
        validate(text)
