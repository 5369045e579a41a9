"""The big shared kernel files of ``aten/src/ATen/native/`` whose names say little about their
ops (``BinaryOps.cpp``), for a name-only change when no upstream checkout is configured
(``selection.native.stem_ops``, ``selection.attribution.OpCatalog.native_ops``)."""

from __future__ import annotations

#: File-stem key of the big shared kernel files whose names say nothing about their ops → op
#: keys they implement.  Source: the layout of PyTorch's ``aten/src/ATen/native/`` (2.x); used
#: only when no source tree was given to read the kernels from.
NATIVE_FAMILIES: dict[str, tuple[str, ...]] = {
    "binaryops": ("add", "sub", "mul", "div", "remainder", "fmod", "pow", "maximum", "minimum",
                  "atan2", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"),
    "unaryops": ("abs", "neg", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
                 "sigmoid", "sign", "floor", "ceil", "round", "trunc", "reciprocal", "erf"),
    "reduceops": ("sum", "mean", "prod", "amax", "amin", "max", "min", "std", "var", "norm",
                  "argmax", "argmin", "cumsum", "logsumexp", "all", "any"),
    "tensorshape": ("cat", "stack", "transpose", "permute", "reshape", "view", "expand", "squeeze",
                    "unsqueeze", "split", "chunk", "narrow", "select", "slice", "t", "flatten"),
    "linearalgebra": ("addmm", "mm", "bmm", "matmul", "baddbmm", "addbmm", "dot", "vdot",
                      "addmv", "mv", "linalg_vector_norm"),
    "blas": ("addmm", "mm", "addmv", "mv", "dot", "vdot"),
    "activation": ("gelu", "silu", "relu", "hardtanh", "elu", "leaky_relu", "softplus",
                   "hardswish", "hardsigmoid", "mish", "threshold", "glu", "prelu", "log_sigmoid"),
    "pointwiseops": ("addcmul", "addcdiv", "lerp"),
    "tensorcompare": ("where", "clamp", "clamp_min", "clamp_max", "isclose", "allclose", "isnan"),
    "normalization": ("native_batch_norm", "batch_norm", "native_layer_norm", "layer_norm",
                      "native_group_norm", "group_norm"),
    "loss": ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
             "kl_div", "margin_ranking_loss", "soft_margin_loss"),
    "lossnll": ("nll_loss", "nll_loss_forward", "nll_loss2d"),
    "indexing": ("index", "index_put", "index_select", "gather", "scatter", "masked_fill",
                 "index_add"),
    "tensorfactories": ("arange", "full", "zeros", "ones", "empty", "linspace", "eye"),
    "sorting": ("sort", "topk", "kthvalue", "median"),
    "tensoradvancedindexing": ("index", "index_put", "_index_put_impl_", "index_select", "index_add",
                               "index_copy", "index_fill", "index_reduce", "gather", "scatter",
                               "scatter_add", "scatter_reduce", "masked_fill", "masked_scatter",
                               "masked_select", "take", "put", "nonzero", "count_nonzero"),
    "tensortransformations": ("flip", "roll", "rot90", "fliplr", "flipud", "atleast_1d",
                              "atleast_2d", "atleast_3d"),
}
