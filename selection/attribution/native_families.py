"""The big shared kernel files of ``aten/src/ATen/native/`` whose names say little about their
ops (``BinaryOps.cpp``), for a name-only change when no upstream checkout is configured
(``selection.attribution.native.stem_ops``, ``selection.attribution.rules.OpCatalog.native_ops``)."""

from __future__ import annotations

#: File-stem key of the big shared kernel files whose names say little about their ops → the op
#: keys they implement.  Source: the ``TORCH_IMPL_FUNC`` / ``CREATE_UNARY_TORCH_IMPL_FUNC`` /
#: kernel definitions of each file in PyTorch's ``aten/src/ATen/native/`` (2.x: ``UnaryOps.cpp``
#: defines ``expm1_out``, ``log1p_out``, ``log2_out``; ``BinaryOps.cpp`` ``rsub``;
#: ``TensorCompare.cpp`` ``max``/``min`` by dim; ``Normalization.cpp`` the batch norms,
#: ``_native_batch_norm_legit`` included; ``layer_norm.cpp`` ``rms_norm`` too).  Used only when
#: no patch names the kernel and no upstream checkout was given to read the file.
NATIVE_FAMILIES: dict[str, tuple[str, ...]] = {
    "binaryops": ("add", "sub", "rsub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
                  "floor_divide", "remainder", "fmod", "maximum", "minimum", "fmax", "fmin", "atan2",
                  "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
                  "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
                  "hypot", "copysign", "xlogy", "special_xlog1py", "special_zeta", "nextafter",
                  "logaddexp", "logaddexp2", "heaviside", "gcd", "lcm", "igamma", "igammac", "ldexp",
                  "float_power", "pow"),
    "unaryops": ("abs", "absolute", "neg", "negative", "exp", "exp2", "expm1", "log", "log2", "log10",
                 "log1p", "sqrt", "rsqrt", "square", "sin", "cos", "tan", "asin", "acos", "atan",
                 "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "logit", "sign", "sgn",
                 "signbit", "floor", "ceil", "round", "trunc", "fix", "frac", "reciprocal", "erf",
                 "erfc", "erfinv", "digamma", "lgamma", "polygamma", "mvlgamma", "i0", "sinc",
                 "nan_to_num", "deg2rad", "rad2deg", "angle", "conj_physical", "bitwise_not",
                 "logical_not", "positive", "frexp", "special_entr", "special_erfcx", "special_i0e",
                 "special_i1", "special_i1e", "special_ndtri", "special_log_ndtr"),
    "reduceops": ("sum", "nansum", "mean", "nanmean", "prod", "amax", "amin", "std", "var", "std_mean",
                  "var_mean", "norm", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
                  "logcumsumexp", "logsumexp", "all", "any", "diff", "gradient"),
    "tensorshape": ("cat", "stack", "transpose", "permute", "reshape", "view", "expand", "squeeze",
                    "unsqueeze", "split", "chunk", "narrow", "select", "slice", "t", "flatten"),
    "linearalgebra": ("addmm", "mm", "bmm", "matmul", "baddbmm", "addbmm", "dot", "vdot",
                      "addmv", "mv", "linalg_vector_norm"),
    "blas": ("addmv", "mv", "dot", "vdot", "_scaled_mm"),  # mm/addmm: LinearAlgebra.cpp
    "activation": ("gelu", "silu", "relu", "hardtanh", "elu", "leaky_relu", "softplus",
                   "hardswish", "hardsigmoid", "mish", "threshold", "glu", "prelu", "log_sigmoid"),
    "pointwiseops": ("addcmul", "addcdiv", "lerp"),
    "tensorcompare": ("where", "clamp", "clamp_min", "clamp_max", "clip", "isclose", "allclose",
                      "isnan", "isinf", "isposinf", "isneginf", "isreal", "isin", "max", "min",
                      "aminmax", "mode"),
    "normalization": ("batch_norm", "native_batch_norm", "_native_batch_norm_legit",
                      "_native_batch_norm_legit_no_training", "_batch_norm_impl_index",
                      "_batch_norm_with_update", "_batch_norm_no_update", "native_batch_norm_backward",
                      "instance_norm", "renorm"),
    "layernorm": ("layer_norm", "native_layer_norm", "native_layer_norm_backward", "rms_norm",
                  "_fused_rms_norm"),
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
