"""Torch's own argument checks run before Spyre refuses an op it has no kernel for.

An aten op validates its arguments (dtypes of ``out=``, negative orders, shapes) in code every
backend shares — structured meta functions and the checks at the top of each kernel — before
any device work.  torch-spyre's configs declare tests such as
``TestUnaryUfuncs::test_isposinf_isneginf_non_boolean_output`` and ``test_polygamma_neg``
``mandatory_success`` on real Spyre: the error those tests expect is torch's, raised before
the Spyre stack would say the op is missing.

``torch_error_first(op, args, kwargs)`` runs ``op`` on CPU copies of the arguments (device
tensors copied, so nothing on the device is written) and returns the ``RuntimeError`` /
``ValueError`` / ``TypeError`` / ``IndexError`` torch raises, or ``None`` when the call is valid
(the caller then raises its ``SpyreUnsupportedOpError``).  Called once per call of an op the
support table denies; costs one CPU run of that op.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import torch
import torchgen
import yaml
from torch.utils._pytree import tree_map

from . import tensors

__all__ = ["torch_error_first", "meta_error_first"]


def _cpu_copy(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.device.type == "spyre":
        return tensors.cpu_alias(x).clone()
    if isinstance(x, torch.device) and x.type == "spyre":
        return torch.device("cpu")
    if isinstance(x, str) and x.startswith("spyre"):
        return "cpu"
    return x


def torch_error_first(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> BaseException | None:
    """See the module docstring."""
    try:
        op(*tree_map(_cpu_copy, args), **tree_map(_cpu_copy, kwargs))
    except NotImplementedError:
        return None
    except (RuntimeError, ValueError, TypeError, IndexError) as e:
        return e
    except Exception:  # noqa: BLE001 - anything else says nothing about the arguments
        return None
    return None


@functools.cache
def _structured() -> frozenset[str]:
    """aten packets with a structured kernel (``structured: True`` or ``structured_delegate`` in
    torchgen's packaged ``native_functions.yaml``): their meta function checks the arguments."""
    path = Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = set()
    for entry in yaml.load(path.read_text(encoding="utf-8"), Loader=loader):
        if entry.get("structured") or entry.get("structured_delegate"):
            out.add("aten::" + entry["func"].split("(", 1)[0].split(".", 1)[0])
    return frozenset(out)


def meta_error_first(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> BaseException | None:
    """torch's argument error for a structured op (``torch_error_first``), else ``None``.

    torch-spyre runs an op it lowers through its meta function first, so a structured op's
    argument checks (``isposinf.out``'s non-boolean ``out=``) raise torch's error before Spyre
    says the kernel is missing; an unstructured op (``flip``, ``frexp.Tensor_out``: checks inside
    the CPU/CUDA kernels) reaches the missing kernel first (torch-spyre
    ``tests/configs/upstream_tests_beta/test_shape_ops.yaml``: ``test_flip_errors`` xfail,
    NotImplementedError).
    """
    if op._schema.name.split(".", 1)[0] not in _structured():
        return None
    return torch_error_first(op, args, kwargs)
