"""SPYRE_SIM_FAULTS: parsing, and each fault kind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from spyre_backend import faults
from spyre_backend.faults import Fault, parse_faults

SPEC = "aten::_softmax:offset=0.01,aten::addcmul:nan,aten::mm:raise,aten::div:abort,aten::mul:hang,aten::add:flaky=0.2"


def test_parse_full_spec():
    parsed = parse_faults(SPEC)
    assert parsed["aten::_softmax"] == Fault("aten::_softmax", "offset", 0.01)
    assert parsed["aten::addcmul"].kind == "nan"
    assert parsed["aten::mm"].kind == "raise"
    assert parsed["aten::div"].kind == "abort"
    assert parsed["aten::mul"].kind == "hang"
    assert parsed["aten::add"] == Fault("aten::add", "flaky", 0.2)
    assert parse_faults("") == {} and parse_faults(" , ") == {}


@pytest.mark.parametrize(
    "bad",
    ["softmax:nan", "aten::mm", "aten::mm:explode", "aten::sofmax:nan", "aten::mm.bogus:raise", "aten::mm:offset=x",
     "aten::mm:flaky=2", "aten::mm:nan=1"],
)
def test_invalid_entry_raises_value_error_naming_it(bad):
    with pytest.raises(ValueError, match="bad entry"):
        parse_faults(f"aten::add:raise,{bad}")
    try:
        parse_faults(bad)
    except ValueError as exc:
        assert repr(bad) in str(exc)


def test_no_faults_configured_by_default():
    assert faults.FAULTS == {}


@pytest.fixture
def inject(monkeypatch):
    def set_spec(spec: str) -> None:
        monkeypatch.setattr(faults, "FAULTS", parse_faults(spec))

    return set_spec


def test_offset(inject):
    x = torch.randn(4, 8, dtype=torch.float16)
    inject("aten::_softmax:offset=0.5")
    out = torch.softmax(x.to("spyre"), -1).cpu()
    torch.testing.assert_close(out, torch.softmax(x, -1) + 0.5, atol=1e-2, rtol=1e-2)


def test_nan(inject):
    x = torch.randn(3, dtype=torch.float16).to("spyre")
    inject("aten::addcmul:nan")
    out = torch.addcmul(x, x, x).cpu()
    assert torch.isnan(out).any()


def test_raise(inject):
    a = torch.randn(2, 2, dtype=torch.float16).to("spyre")
    inject("aten::mm:raise")
    with pytest.raises(RuntimeError, match="injected fault: aten::mm"):
        a @ a


def test_overload_specific_fault(inject):
    a = torch.ones(2, dtype=torch.float16).to("spyre")
    inject("aten::sub.out:raise")
    with pytest.raises(RuntimeError, match="injected fault"):
        a - a
    a + a


def test_flaky_outside_a_test_draws_per_call(inject, monkeypatch):
    a = torch.randn(2, dtype=torch.float16).to("spyre")
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    inject("aten::add:flaky=0.5")
    failures = 0
    for _ in range(200):
        try:
            a + a
        except RuntimeError:
            failures += 1
    assert 50 < failures < 150
    inject("aten::add:flaky=0")
    a + a


def _attempt(a: torch.Tensor, calls: int) -> bool:
    """One simulated test attempt calling ``add`` ``calls`` times; True if it failed."""
    try:
        for _ in range(calls):
            a + a
    except RuntimeError as e:
        assert "injected flaky fault: aten::add" in str(e)
        return True
    return False


def test_flaky_draws_once_per_test_attempt_not_per_call(inject, monkeypatch):
    a = torch.randn(2, dtype=torch.float16).to("spyre")
    inject("aten::add:flaky=0.2")
    failed_attempts, tests, all_three_failed = 0, 400, 0
    for t in range(tests):
        monkeypatch.setenv("PYTEST_CURRENT_TEST", f"/tmp/x/spec.yaml::s::T::test_{t} (call)")
        fails = [_attempt(a, calls=20) for _ in range(3)]  # like --reruns 2 when every attempt fails
        failed_attempts += fails[0]
        all_three_failed += all(fails)
    # per attempt: ~0.2 of the tests fail their first attempt (per call it would be 1 - 0.8**20 = 0.99)
    assert 0.12 * tests < failed_attempts < 0.28 * tests
    assert all_three_failed < 0.03 * tests  # 0.2**3 = 0.008


def test_flaky_draw_depends_on_seed_op_test_and_attempt_only(inject, monkeypatch):
    a = torch.randn(2, dtype=torch.float16).to("spyre")
    inject("aten::add:flaky=0.5")

    def outcomes() -> list[bool]:
        out = []
        for t in range(30):
            monkeypatch.setenv("PYTEST_CURRENT_TEST", f"/tmp/{t % 3}/spec.yaml::s::T::test_{t} (call)")
            first = _attempt(a, calls=3)
            out += [first] + ([_attempt(a, calls=3)] if first else [])
        return out

    once = outcomes()
    assert once == outcomes()  # the same draws again, whatever ran in between
    expected = []
    for t in range(30):
        test = f"spec.yaml::s::T::test_{t}"  # the directory of the spec file does not matter
        first = faults.attempt_draw(faults.SEED, "aten::add", test, 1) < 0.5
        expected += [first] + ([faults.attempt_draw(faults.SEED, "aten::add", test, 2) < 0.5] if first else [])
    assert once == expected
    assert True in once and False in once
    monkeypatch.setattr(faults, "SEED", faults.SEED + 1)
    assert outcomes() != once


def test_env_is_read_at_import_and_abort_kills_the_process(run_python):
    proc = run_python(
        """
        import torch, spyre_backend
        a = torch.ones(2, dtype=torch.float16, device="spyre")
        (a * a).cpu()
        print("before", flush=True)
        (a / a).cpu()
        print("after", flush=True)
        """,
        env={"SPYRE_SIM_FAULTS": "aten::div:abort"},
    )
    assert proc.stdout.strip() == "before"
    assert proc.returncode < 0 or proc.returncode == 134  # SIGABRT


def test_hang_blocks_until_killed():
    code = textwrap.dedent(
        """
        import torch, spyre_backend
        a = torch.ones(2, dtype=torch.float16, device="spyre")
        (a + a).cpu()
        print("hanging", flush=True)
        a * a
        print("returned", flush=True)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPYRE_SIM_")}
    env["SPYRE_SIM_FAULTS"] = "aten::mul:hang"
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "hanging"
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.5)
    finally:
        proc.kill()
        proc.wait()
    assert proc.stdout.read() == ""


def test_invalid_env_fails_import(run_python):
    proc = run_python("import spyre_backend", env={"SPYRE_SIM_FAULTS": "aten::mm:boom"})
    assert proc.returncode != 0
    assert "ValueError" in proc.stderr and "aten::mm:boom" in proc.stderr


def test_announced_attempts_draw_exactly_once_each(inject, monkeypatch):
    """With the runner's plugin announcing attempts (``begin_attempt``), a test that catches the
    injected error and calls the op again stays failed for that attempt; the next announced
    attempt draws anew with the next attempt number."""
    a = torch.randn(2, dtype=torch.float16).to("spyre")
    inject("aten::add:flaky=0.5")
    seen = {1: 0, 2: 0}
    for t in range(40):
        node = f"/run/w/spec.yaml::s::T::test_{t}"
        monkeypatch.setenv("PYTEST_CURRENT_TEST", f"{node} (call)")
        for attempt in (1, 2):
            faults.begin_attempt(node)
            expected = faults.attempt_draw(faults.SEED, "aten::add", f"spec.yaml::s::T::test_{t}",
                                           attempt) < 0.5
            results = [_attempt(a, calls=1) for _ in range(3)]  # caught and called again
            assert results == [expected] * 3
            seen[attempt] += expected
    assert 0 < seen[1] < 40 and 0 < seen[2] < 40
