"""Dtype names in specs: torch's names, with torch's aliases, as one canonical name each.

torch-spyre (RFC 1287) requires "all dtype strings must be valid PyTorch dtype names"; its
configs use both ``float16`` and ``half``.  ``canonical_dtype(name)`` maps every name that is a
``torch.<name>`` dtype attribute (and the same with a ``torch.`` prefix) to the canonical name
``str(torch.<name>)`` without the prefix: ``half`` → ``float16``, ``float`` → ``float32``,
``double`` → ``float64``, ``long`` → ``int64``, ``int`` → ``int32``, ``short`` → ``int16``,
``cfloat`` → ``complex64``, ``cdouble`` → ``complex128``, ``chalf`` → ``complex32``.  The table
is torch 2.x's dtype attributes, written out so loading a spec does not import torch (a test
checks it against the installed torch).  Raises ``ValueError`` listing the valid names.
"""

from __future__ import annotations

#: canonical dtype names (``str(torch.<dtype>)`` without ``torch.``).
DTYPE_NAMES: frozenset[str] = frozenset(
    {
        "float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128",
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
        "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    }
)
#: torch's dtype aliases (``torch.half is torch.float16`` etc.).
ALIASES: dict[str, str] = {
    "half": "float16", "float": "float32", "double": "float64", "long": "int64", "int": "int32",
    "short": "int16", "cfloat": "complex64", "cdouble": "complex128", "chalf": "complex32",
}


def canonical_dtype(name: str) -> str:
    """The canonical name of dtype ``name`` (``"torch.half"`` → ``"float16"``); ``ValueError``
    when it is not a torch dtype name."""
    bare = name.removeprefix("torch.") if isinstance(name, str) else name
    if bare in DTYPE_NAMES:
        return bare
    if bare in ALIASES:
        return ALIASES[bare]
    raise ValueError(f"unknown dtype {name!r}; expected a torch dtype name, one of "
                     f"{sorted(DTYPE_NAMES | set(ALIASES))}")
