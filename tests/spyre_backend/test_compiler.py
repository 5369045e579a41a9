"""torch.compile(model, backend="spyre"): support-table check, adapter rewrites, execution on the device."""

from __future__ import annotations

import pytest
import torch

import spyre_backend  # noqa: F401
from spyre_backend import compiler


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.linear(x)
        return torch.nn.functional.gelu(y.pow(3.0), approximate="tanh").sum(-1)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_backend_is_registered_by_name():
    from torch._dynamo.backends.registry import lookup_backend

    assert lookup_backend("spyre") is compiler.spyre_compiler


def test_compiled_model_with_adapter_rewrites_matches_eager():
    torch.manual_seed(0)
    model = _Block().half().to("spyre")
    x = torch.randn(4, 8, dtype=torch.float16).to("spyre")
    with torch.no_grad():
        eager = model(x).cpu()
        before = spyre_backend.support.lookup("aten::pow").adapter
        out = torch.compile(model, backend="spyre")(x)
    assert out.device.type == "spyre"
    torch.testing.assert_close(out.cpu(), eager, atol=1e-2, rtol=1e-2)
    (graph,) = compiler.last_compiled
    assert sorted(r.split(":")[0] for r in graph.rewrites) == ["gelu_tanh", "pow_integral"]
    targets = {n.target for n in graph.graph_module.graph.nodes if n.op == "call_function"}
    assert torch.ops.aten.pow.Tensor_Scalar not in targets and torch.ops.aten.gelu.default not in targets
    assert torch.ops.aten.mul.Tensor in targets and torch.ops.aten.tanh.default in targets
    assert before == "pow_integral"


def test_compiled_training_step_runs_backward_on_the_device():
    torch.manual_seed(0)
    model = _Block().half().to("spyre")
    x = torch.randn(4, 8, dtype=torch.float16).to("spyre")
    torch.compile(model, backend="spyre")(x).sum().backward()
    grad = model.linear.weight.grad
    assert grad is not None and grad.device.type == "spyre" and torch.isfinite(grad.cpu()).all()


def test_unsupported_nodes_are_all_listed_with_aten_names():
    def f(x):
        return torch.special.erfinv(x) + x[torch.tensor([0, 1])].sum() + x.to(torch.float64).sum().half()

    x = torch.randn(4, dtype=torch.float16).to("spyre")
    with pytest.raises(Exception) as info:
        torch.compile(f, backend="spyre")(x)
    msg = str(info.value)
    assert "SpyreUnsupportedOpError" in msg and "node(s) Spyre cannot run" in msg
    assert "aten::erfinv" in msg and "aten::index.Tensor" in msg
    assert "float64" in msg
    assert "lift_fresh_copy" not in msg  # CPU constants are not device nodes


def test_non_integral_exponent_is_left_to_the_kernel():
    x = torch.rand(5, dtype=torch.float16).to("spyre") + 0.5
    out = torch.compile(lambda t: t.pow(2.5), backend="spyre")(x)
    torch.testing.assert_close(out.cpu(), x.cpu().pow(2.5), atol=1e-2, rtol=1e-2)
    assert compiler.last_compiled[0].rewrites == []
