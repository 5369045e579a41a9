"""Shared inputs of the ``relay replay`` regression tests: small op_db specs and a softmax change.

``relay`` itself (run the CLI in a subprocess with its own state directory) lives in
``tests/e2e/test_replay_cli.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import yaml

#: A change set touching ``softmax``/``log_softmax`` (torch/_refs symbols: every test whose captured
#: aten ops include ``aten::_softmax`` or ``aten::_log_softmax`` is selected) and ``mul`` (a per-op
#: header); ``add`` is not touched.
SOFTMAX_CHANGE = {"base": "v-base", "head": "v-head", "files": [
    {"filename": "torch/_refs/__init__.py", "status": "modified", "symbols": ["softmax", "log_softmax"]},
    {"filename": "torch/include/ATen/ops/mul_native.h", "status": "modified"}]}


@pytest.fixture
def softmax_change(tmp_path: Path) -> Path:
    """``SOFTMAX_CHANGE`` written to ``<tmp_path>/change.json``."""
    path = tmp_path / "change.json"
    path.write_text(json.dumps(SOFTMAX_CHANGE))
    return path


@pytest.fixture
def op_db_spec(tmp_path: Path) -> Callable[..., Path]:
    """``op_db_spec(name, ops, *, exclude=(), dtypes=("float16",), templates=("TestCommon::test_compare_cpu",))``
    writes ``<tmp_path>/<name>.yaml``: a spec over the installed ``op_db`` that runs only
    ``templates`` on the OpInfos ``ops`` (minus ``exclude``) at ``dtypes`` (everything else
    ``skip``); item ids are ``<name>::<template>[<op>-<dtype>]``.  Returns the path."""

    def make(name: str, ops: Sequence[str], *, exclude: Sequence[str] = (), dtypes: Sequence[str] = ("float16",),
             templates: Sequence[str] = ("TestCommon::test_compare_cpu",)) -> Path:
        edits = {"ops": {"include": [{"name": op} for op in ops]}}
        if exclude:
            edits["ops"]["exclude"] = [{"name": op} for op in exclude]
        spec = {"test_suite_config": {
            "files": [{"source": "op_db", "unlisted_test_mode": "skip", "reason": "only these templates here",
                       "issue": "test fixture", "tests": [{"names": list(templates), "edits": edits}]}],
            "global": {"supported_dtypes": list(dtypes)}}}
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        return path

    return make
