"""Agreement of sim outcomes with a config's declared Spyre behaviour, and its clusters."""

from __future__ import annotations

from test_specs.authoring.fidelity import SIM_FAILS, SIM_PASSES, agreement, clusters
from test_specs.values.results import TestResult


def _r(i: int, mode: str, outcome: str, message: str | None = None, upstream: str = "t.py::T::test_a") -> TestResult:
    return TestResult(id=f"s::t{i}", upstream=upstream, mode=mode, outcome=outcome, message=message)


def test_agreement_counts_each_direction() -> None:
    rs = [_r(0, "mandatory_success", "passed"), _r(1, "mandatory_success", "flaky"),
          _r(2, "xfail", "xfailed"), _r(3, "xfail_strict", "xfailed"),
          _r(4, "mandatory_success", "failed", "device raised SpyreUnsupportedOpError: aten::random_.from at 0x7f00"),
          _r(5, "mandatory_success", "crashed", "device raised SpyreUnsupportedOpError: aten::random_.from at 0x7f11"),
          _r(6, "xfail", "xpassed", upstream="t.py::T::test_b"),
          _r(7, "xfail_strict", "failed", upstream="t.py::T::test_b"),
          _r(8, "mandatory_success", "skipped")]
    a = agreement(rs)
    assert (a.agree, a.scored, dict(a.unscored)) == (4, 8, {"skipped": 1}) and a.rate == 0.5
    assert a.by_mode == {("pass", True): 2, ("fail", False): 2, ("pass", False): 2, ("fail", True): 2}
    got = [(d, s, [r.id for r in rs_]) for d, s, rs_ in clusters(a.disagree)]
    assert got == [(SIM_FAILS, "device raised SpyreUnsupportedOpError: aten::random_.from at 0x…", ["s::t4", "s::t5"]),
                   (SIM_PASSES, "test_b", ["s::t6", "s::t7"])]


def test_nothing_scored_is_full_agreement() -> None:
    assert agreement([]).rate == 1.0


def test_compile_environment_xfails_are_set_apart_not_scored() -> None:
    """torch-spyre xfails blaming Inductor / dxp_standalone are their own class (issue 27)."""
    from test_specs.authoring.fidelity import compile_environment

    assert compile_environment("xfail", "xfail: dxp_standalone not detected")
    assert compile_environment("xfail_strict", "NotImplementedError, torch._inductor.exc.InductorError")
    assert not compile_environment("xfail", "missing Spyre kernel for aten::flip")
    assert not compile_environment("mandatory_success", "InductorError")
    rs = [_r(0, "xfail", "xpassed"), _r(1, "xfail", "xpassed"), _r(2, "mandatory_success", "passed")]
    a = agreement(rs, {"s::t0"})
    assert (a.compile_env, a.agree, a.scored) == (1, 1, 2)
    assert agreement(rs, {"s::t2"}).compile_env == 0  # a declared pass is never set apart
