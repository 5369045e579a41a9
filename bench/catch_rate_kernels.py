"""Where PyTorch defines an op's CPU kernel: the file a real change to that op touches.

``bench/catch_rate.py`` pushes a change of this file for each op it faults.  The table is written
down from the PyTorch source layout (``aten/src/ATen/native/``: the ``TORCH_IMPL_FUNC`` /
``DEFINE_DISPATCH`` / kernel definitions of each op, as of the 2.x releases), independently of
``selection.attribution.source_map``, so the bench measures selection against the source rather than against
its own attribution.  Ops are aten overload packets as ``spyre_backend.faults`` takes them; only
files whose ops are certain are listed (an op missing here is simply never drawn).
"""

from __future__ import annotations

N = "aten/src/ATen/native/"

KERNEL_FILES: dict[str, tuple[str, ...]] = {
    N + "BinaryOps.cpp": (
        "aten::add", "aten::sub", "aten::mul", "aten::div", "aten::remainder", "aten::fmod",
        "aten::atan2", "aten::maximum", "aten::minimum", "aten::fmax", "aten::fmin",
        "aten::bitwise_and", "aten::bitwise_or", "aten::bitwise_xor", "aten::logical_and",
        "aten::logical_or", "aten::logical_xor", "aten::eq", "aten::ne", "aten::lt", "aten::gt",
        "aten::le", "aten::ge", "aten::hypot", "aten::copysign", "aten::xlogy", "aten::nextafter",
        "aten::logaddexp", "aten::logaddexp2", "aten::heaviside", "aten::floor_divide", "aten::gcd",
        "aten::lcm", "aten::igamma", "aten::igammac", "aten::special_xlog1py", "aten::rsub",
        "aten::bitwise_left_shift", "aten::bitwise_right_shift"),
    N + "UnaryOps.cpp": (
        "aten::abs", "aten::neg", "aten::exp", "aten::exp2", "aten::expm1", "aten::log", "aten::log2",
        "aten::log10", "aten::log1p", "aten::sin", "aten::cos", "aten::tan", "aten::asin",
        "aten::acos", "aten::atan", "aten::sinh", "aten::cosh", "aten::tanh", "aten::asinh",
        "aten::acosh", "aten::atanh", "aten::sqrt", "aten::rsqrt", "aten::ceil", "aten::floor",
        "aten::round", "aten::trunc", "aten::frac", "aten::reciprocal", "aten::sign", "aten::sgn",
        "aten::signbit", "aten::erf", "aten::erfc", "aten::erfinv", "aten::digamma", "aten::lgamma",
        "aten::i0", "aten::sigmoid", "aten::logit", "aten::nan_to_num", "aten::deg2rad",
        "aten::rad2deg", "aten::angle", "aten::sinc", "aten::bitwise_not", "aten::logical_not",
        "aten::polygamma", "aten::mvlgamma", "aten::conj_physical"),
    N + "Activation.cpp": (
        "aten::gelu", "aten::silu", "aten::mish", "aten::hardswish", "aten::hardsigmoid", "aten::elu",
        "aten::leaky_relu", "aten::softplus", "aten::threshold", "aten::hardtanh", "aten::softshrink",
        "aten::hardshrink", "aten::log_sigmoid_forward", "aten::relu", "aten::rrelu_with_noise",
        "aten::_prelu_kernel"),
    N + "GatedLinearUnit.cpp": ("aten::glu",),
    N + "SoftMax.cpp": ("aten::_softmax", "aten::_log_softmax"),
    N + "LinearAlgebra.cpp": (
        "aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::addr",
        "aten::linalg_vector_norm"),
    N + "Blas.cpp": ("aten::addmv", "aten::dot", "aten::vdot"),
    N + "ReduceOps.cpp": (
        "aten::sum", "aten::mean", "aten::prod", "aten::amax", "aten::amin", "aten::std",
        "aten::var", "aten::std_mean", "aten::var_mean", "aten::cumsum", "aten::cumprod",
        "aten::logsumexp", "aten::norm", "aten::all", "aten::any", "aten::argmax", "aten::argmin",
        "aten::nansum", "aten::aminmax", "aten::cummax", "aten::cummin", "aten::logcumsumexp"),
    N + "TensorCompare.cpp": ("aten::where", "aten::clamp", "aten::clamp_min", "aten::clamp_max",
                              "aten::isin", "aten::max", "aten::min"),
    N + "TensorAdvancedIndexing.cpp": (
        "aten::index_select", "aten::gather", "aten::scatter", "aten::scatter_add",
        "aten::scatter_reduce", "aten::index_add", "aten::index_copy", "aten::index_fill",
        "aten::masked_fill", "aten::masked_select", "aten::take", "aten::put", "aten::masked_scatter",
        "aten::index", "aten::index_reduce"),
    N + "Sorting.cpp": ("aten::sort", "aten::topk", "aten::kthvalue", "aten::median", "aten::nanmedian"),
    N + "TensorTransformations.cpp": ("aten::flip", "aten::roll", "aten::rot90"),
    N + "PointwiseOps.cpp": ("aten::addcmul", "aten::addcdiv"),
    N + "Pow.cpp": ("aten::pow", "aten::float_power"),
    N + "Lerp.cpp": ("aten::lerp",),
    N + "Fill.cpp": ("aten::fill", "aten::fill_"),
    N + "Distance.cpp": ("aten::_cdist_forward", "aten::_pdist_forward"),
    N + "TriangularOps.cpp": ("aten::tril", "aten::triu"),
    N + "Cross.cpp": ("aten::linalg_cross",),
    N + "SummaryOps.cpp": ("aten::bincount", "aten::histc"),
    N + "Bucketization.cpp": ("aten::bucketize", "aten::searchsorted"),
    N + "RangeFactories.cpp": ("aten::arange", "aten::linspace", "aten::logspace"),
    N + "Loss.cpp": ("aten::mse_loss", "aten::binary_cross_entropy", "aten::smooth_l1_loss",
                     "aten::huber_loss", "aten::soft_margin_loss", "aten::margin_ranking_loss"),
    N + "LossNLL.cpp": ("aten::nll_loss_forward", "aten::nll_loss2d_forward"),
    N + "Normalization.cpp": ("aten::_native_batch_norm_legit", "aten::native_batch_norm"),
    N + "group_norm.cpp": ("aten::native_group_norm",),
    N + "layer_norm.cpp": ("aten::native_layer_norm",),
    N + "Embedding.cpp": ("aten::embedding",),
    N + "Repeat.cpp": ("aten::repeat_interleave",),
    N + "Unique.cpp": ("aten::_unique2", "aten::unique_consecutive", "aten::unique_dim"),
    N + "AdaptiveAveragePooling.cpp": ("aten::_adaptive_avg_pool2d",),
    N + "AveragePool2d.cpp": ("aten::avg_pool2d",),
    N + "DilatedMaxPool2d.cpp": ("aten::max_pool2d_with_indices",),
    N + "ReflectionPad.cpp": ("aten::reflection_pad1d", "aten::reflection_pad2d"),
    N + "ReplicationPadding.cpp": ("aten::replication_pad1d", "aten::replication_pad2d"),
    N + "UpSampleNearest2d.cpp": ("aten::upsample_nearest2d",),
    N + "UpSampleBilinear2d.cpp": ("aten::upsample_bilinear2d",),
    N + "Correlation.cpp": ("aten::cov", "aten::corrcoef"),
}
