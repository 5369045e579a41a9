"""Module classes built of other module classes (issue 13): a change to ``Linear``,
``LayerNorm`` or ``MultiheadAttention`` reaches the Transformer layers built of them, a change
to ``Conv2d`` reaches ``LazyConv2d`` (a subclass), and ``F.multi_head_attention_forward``
reaches ``nn.MultiheadAttention`` and the layers using it.  Inputs: small upstream-style files."""

from __future__ import annotations

import ast
from pathlib import Path

from selection.attribution.module_graph import callers, dependents, module_graph, read_classes
from selection.attribution.rules import OpCatalog, attribute
from selection.attribution.source_map import SourceMap
from selection.models import ChangedFile

LINEAR_PY = '''\
class Linear(Module):
    def forward(self, input):
        return F.linear(input, self.weight, self.bias)


class NonDynamicallyQuantizableLinear(Linear):
    pass
'''
ACTIVATION_PY = '''\
class MultiheadAttention(Module):
    def __init__(self, embed_dim):
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim)

    def forward(self, query, key, value):
        return F.multi_head_attention_forward(query, key, value)


class Softmax(Module):
    def forward(self, input):
        return F.softmax(input, self.dim)
'''
TRANSFORMER_PY = '''\
class TransformerEncoder(Module):
    def __init__(self, encoder_layer: "TransformerEncoderLayer", num_layers):
        self.layers = _get_clones(encoder_layer, num_layers)


class TransformerEncoderLayer(Module):
    def __init__(self, d_model):
        self.self_attn = MultiheadAttention(d_model)
        self.linear1 = Linear(d_model, d_model)
        self.norm1 = LayerNorm(d_model)
'''
NORMALIZATION_PY = '''\
class LayerNorm(Module):
    pass
'''
CONV_PY = '''\
class _ConvNd(Module):
    pass


class Conv2d(_ConvNd):
    pass


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    pass
'''
YAML = "- func: addmm(Tensor self, Tensor mat1, Tensor mat2) -> Tensor\n"
FILES = {"linear.py": LINEAR_PY, "activation.py": ACTIVATION_PY, "transformer.py": TRANSFORMER_PY,
         "normalization.py": NORMALIZATION_PY, "conv.py": CONV_PY}


def test_read_classes_bases_bodies_annotations_and_functional_calls() -> None:
    uses, functional = read_classes(ast.parse(t) for t in FILES.values())
    assert uses["TransformerEncoderLayer"] == ["LayerNorm", "Linear", "MultiheadAttention"]
    assert uses["TransformerEncoder"] == ["TransformerEncoderLayer"]  # a string annotation
    assert uses["LazyConv2d"] == ["Conv2d"] and uses["Conv2d"] == ["_ConvNd"]
    assert functional["MultiheadAttention"] == ["multi_head_attention_forward"]
    assert callers("softmax", functional) == {"Softmax"}
    assert dependents(["Linear"], uses) == {"NonDynamicallyQuantizableLinear", "MultiheadAttention",
                                            "TransformerEncoderLayer", "TransformerEncoder"}
    assert dependents(["Softmax"], uses) == set()


def _catalog(tmp_path: Path, modules: set[str]) -> OpCatalog:
    (tmp_path / "torch/nn/modules").mkdir(parents=True)
    for name, text in FILES.items():
        (tmp_path / "torch/nn/modules" / name).write_text(text)
    (tmp_path / "aten/src/ATen/native").mkdir(parents=True)
    (tmp_path / "aten/src/ATen/native/native_functions.yaml").write_text(YAML)
    sm = SourceMap.from_root(tmp_path)
    assert module_graph(tmp_path)[0] == sm.module_uses
    return OpCatalog(aten_ops=frozenset({"aten::addmm"}), opinfos={}, source_map=sm, modules=frozenset(modules))


def test_a_module_change_reaches_the_modules_built_of_it(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, {"nn.Linear", "nn.LayerNorm", "nn.MultiheadAttention", "nn.Conv2d",
                                  "nn.LazyConv2d", "nn.TransformerEncoderLayer", "nn.TransformerEncoder",
                                  "nn.Softmax"})
    norm = attribute(ChangedFile(filename="torch/nn/modules/normalization.py", symbols=["LayerNorm"]), catalog)
    assert norm.modules == {"nn.LayerNorm", "nn.TransformerEncoderLayer", "nn.TransformerEncoder"}
    assert "modules built of them nn.TransformerEncoder, nn.TransformerEncoderLayer" in norm.reasons[0]
    conv = attribute(ChangedFile(filename="torch/nn/modules/conv.py", symbols=["Conv2d.forward"]), catalog)
    assert conv.modules == {"nn.Conv2d", "nn.LazyConv2d"}
    base = attribute(ChangedFile(filename="torch/nn/modules/conv.py", symbols=["_ConvNd"]), catalog)
    assert base.modules == {"nn.Conv2d", "nn.LazyConv2d"}
    soft = attribute(ChangedFile(filename="torch/nn/modules/activation.py", symbols=["Softmax"]), catalog)
    assert soft.modules == {"nn.Softmax"}


def test_a_functional_change_reaches_the_modules_calling_it(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, {"nn.MultiheadAttention", "nn.TransformerEncoderLayer", "nn.Softmax", "nn.Linear"})
    mha = attribute(ChangedFile(filename="torch/nn/functional.py", symbols=["multi_head_attention_forward"]), catalog)
    assert mha.modules == {"nn.MultiheadAttention", "nn.TransformerEncoderLayer"}
    assert catalog.modules_calling("linear") == {"nn.Linear", "nn.MultiheadAttention", "nn.TransformerEncoderLayer"}
