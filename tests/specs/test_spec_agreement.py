"""The bundled specs agree with the bundled device (issue 27), guarded on a sample.

``bench/spec_agreement.py`` runs every bundled item (8,201; minutes); this runs 34 of them,
chosen to cover each cause the bench found before the specs were brought up to date
(2026-12-06, ``relay run --spec test_specs/specs/``: 1,485 failed, 18 xpassed), plus items that
agreed all along in each mode and suite.  Each must do what its spec declares now: a device
change that breaks a capability rule, or a spec edit that declares the wrong mode, fails here.
The causes are ``test_specs.reports.agreement``'s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from test_specs.expand.universe import expand, spec_paths_default
from test_specs.reports.agreement import cause, table
from test_specs.run.runner import run_items

SAMPLE = {
    # capability in_device_copy (torch-spyre upstream_tests/test_view_ops_config.yaml): now xfail
    "modules::TestModule::test_multiple_device_transfer[nn.ZeroPad1d-float16]": "xfail",
    "modules::TestModule::test_forward[nn.CircularPad2d-float16]": "xfail",
    "opinfo_all::TestCommon::test_variant_consistency_eager[mul-float16]": "xfail",
    "opinfo_all::TestCommon::test_compare_cpu[nn.functional.local_response_norm-float16]": "xfail",
    # capability stick_layout (non-contiguous inputs need a restickify): now xfail
    "modules::TestModule::test_cpu_gpu_parity[nn.Bilinear-float32]": "xfail",
    "modules::TestModule::test_non_contiguous_tensors[nn.ELU-bfloat16]": "xfail",
    "opinfo_all::TestCommon::test_noncontiguous_samples[nn.functional.relu6-bfloat16]": "xfail",
    "opinfo_all::TestCommon::test_noncontiguous_samples[fmod-float16]": "xfail",
    # capability missing_kernels (flip, nonzero; upstream_tests_beta/test_shape_ops.yaml): now xfail
    "opinfo_all::TestCommon::test_out[nonzero-float16]": "xfail",
    "opinfo_all::TestCommon::test_compare_cpu[nonzero-float32]": "xfail",
    # capability missing_unfold_kernel: now xfail
    "modules::TestModule::test_cpu_gpu_parity[nn.InstanceNorm1d-float16]": "xfail",
    "modules::TestModule::test_cpu_gpu_parity[nn.MultiheadAttention-float16]": "xfail",
    "opinfo_all::TestCommon::test_compare_cpu[unfold_copy-float16]": "xfail",
    "opinfo_all::TestCommon::test_compare_cpu[unfold_copy-bfloat16]": "xfail",
    # capability missing_activation_kernels (hardsigmoid): now xfail
    "opinfo_all::TestCommon::test_variant_consistency_eager[nn.functional.hardsigmoid-bfloat16]": "xfail",
    "opinfo_all::TestCommon::test_variant_consistency_eager[nn.functional.hardsigmoid-float32]": "xfail",
    # stale xfails (xpassed): tightened to mandatory_success
    "opinfo_all::TestCommon::test_variant_consistency_eager[isnan-float32]": "mandatory_success",
    "opinfo_all::TestCommon::test_noncontiguous_samples[max.reduction_no_dim-float32]": "mandatory_success",
    "opinfo_all::TestCommon::test_noncontiguous_samples[norm.inf-float16]": "mandatory_success",
    "opinfo_all::TestCommon::test_compare_cpu[isnan-bfloat16]": "mandatory_success",
    # agreed all along: passing, xfailed and skipped items of each suite
    "modules::TestModule::test_forward[nn.LPPool2d-float16]": "mandatory_success",
    "modules::TestModule::test_forward[nn.GELU-float16]": "mandatory_success",
    "opinfo_all::TestCommon::test_compare_cpu[t-float16]": "mandatory_success",
    "opinfo_all::TestCommon::test_out[msort-float32]": "mandatory_success",
    "opinfo_core::TestCommon::test_compare_cpu[sqrt-float32]": "mandatory_success",
    "opinfo_core::TestCommon::test_compare_cpu[where-float32]": "mandatory_success",
    "modules::TestModule::test_non_contiguous_tensors[nn.LazyConv1d-float16]": "xfail",
    "modules::TestModule::test_multiple_device_transfer[nn.LazyConvTranspose1d-float16]": "xfail",
    "opinfo_all::TestCommon::test_out_warning[div.trunc_rounding-float32]": "xfail",
    "opinfo_core::TestCommon::test_compare_cpu[softmax.with_dtype-float32]": "xfail",
    "opinfo_core::TestCommon::test_compare_cpu[pow-float32]": "xfail",
    "opinfo_all::TestCommon::test_out_warning[equal-bfloat16]": "skip",
    "opinfo_all::TestCommon::test_variant_consistency_eager[addr-bfloat16]": "skip",
    "opinfo_core::TestCommon::test_compare_cpu[nn.functional.embedding-float32]": "skip",
}


@pytest.fixture(scope="module")
def declared() -> dict[str, str]:
    return {it.id: it.mode for it in expand(spec_paths_default()) if it.id in SAMPLE}


def test_the_sample_declares_what_the_device_does(declared: dict[str, str]) -> None:
    assert declared == SAMPLE


@pytest.mark.timeout(900)
def test_the_sample_agrees_with_the_device(tmp_path: Path, declared: dict[str, str]) -> None:
    results = run_items(sorted(SAMPLE), spec_paths_default(), workdir=tmp_path, device="spyre", reruns=0,
                        timeout_s=120, shards=1)
    results = [r.model_copy(update={"mode": declared[r.id]}) for r in results]
    t = table(results)
    assert t.items == len(SAMPLE)
    assert not t.disagree, {r.id: (r.outcome, cause(r), (r.message or "")[:200]) for r in results if cause(r)}
