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

from typing import Any

import torch
from torch.utils._pytree import tree_map

from . import tensors

__all__ = ["torch_error_first"]


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
