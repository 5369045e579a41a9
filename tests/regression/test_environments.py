from __future__ import annotations

import sys
from pathlib import Path

import pytest

from relay.envs.environments import (
    CurrentProvider,
    Environment,
    EnvironmentError_,
    EnvSpec,
    VenvProvider,
    describe,
    prepare,
)


@pytest.mark.parametrize(("text", "base", "faults"), [
    ("current", "current", None),
    ("torch==2.14.1", "torch==2.14.1", None),
    ("current+faults=aten::_softmax:offset=0.05", "current", "aten::_softmax:offset=0.05"),
    ("/w/torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl+faults=aten::mm:raise",
     "/w/torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl", "aten::mm:raise"),
])
def test_parse(text, base, faults):
    spec = EnvSpec.parse(text)
    assert (spec.base, spec.faults) == (base, faults)
    assert str(spec) == text


@pytest.mark.parametrize("text", ["+faults=aten::mm:raise", "current+faults=", ""])
def test_parse_rejects(text):
    with pytest.raises(EnvironmentError_):
        EnvSpec.parse(text)


def test_current_records_torch_without_importing_it(tmp_path: Path):
    env = prepare("current", tmp_path)
    assert env.python == Path(sys.executable)
    assert env.torch["version"].startswith("2.13.0")
    assert len(env.torch["git_version"]) == 40
    assert env.env == {}


def test_faults_become_the_device_variable(tmp_path: Path):
    env = prepare("current+faults=aten::_softmax:offset=0.05", tmp_path)
    assert env.env == {"SPYRE_SIM_FAULTS": "aten::_softmax:offset=0.05"}
    assert describe(env)["faults"] == "aten::_softmax:offset=0.05"


def test_malformed_faults_are_a_clear_error(tmp_path: Path):
    with pytest.raises(EnvironmentError_, match="no aten op"):
        prepare("current+faults=aten::not_an_op:nan", tmp_path)


def test_unknown_kind_and_missing_wheel(tmp_path: Path):
    with pytest.raises(EnvironmentError_, match="not 'current'"):
        prepare("conda:pytorch", tmp_path)
    with pytest.raises(EnvironmentError_, match="no such wheel"):
        VenvProvider()._wheel(str(tmp_path / "torch-9.9.9-py3-none-any.whl"), tmp_path, Path(sys.executable))


class CommitProvider:
    """A test provider: upstream commit 'c<N>' regresses softmax from N >= 3 (a simulated culprit)."""

    def accepts(self, spec: EnvSpec) -> bool:
        return spec.base.startswith("commit:")

    def build(self, spec: EnvSpec, state_dir: Path) -> Environment:
        n = int(spec.base.removeprefix("commit:c"))
        base = CurrentProvider().build(EnvSpec("current"), state_dir)
        env = {"SPYRE_SIM_FAULTS": "aten::_softmax:offset=0.05"} if n >= 3 else {}
        return Environment(name=str(spec), python=base.python, env=env, torch=base.torch)


def test_providers_are_pluggable(tmp_path: Path):
    good = prepare("commit:c2", tmp_path, providers=[CommitProvider()])
    bad = prepare("commit:c3", tmp_path, providers=[CommitProvider()])
    assert good.env == {} and bad.env == {"SPYRE_SIM_FAULTS": "aten::_softmax:offset=0.05"}
