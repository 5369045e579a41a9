"""Captured call inputs of torch-spyre's model-ops and module-tests configs, and their tensors.

torch-spyre writes the real inputs an op or module saw inside a model into its configs
(RFC-0186 model-ops ``edits.ops.include[].sample_inputs_func``; module tests
``edits.modules.include[].constructor_inputs`` / ``forward_inputs``)::

    sample_inputs_func:
      args:
        - tensor: {shape: [1, 13], stride: [13, 1], storage_offset: 0, dtype: torch.int64,
                   device: cuda, init: randint, init_args: {high: 30522}}
        - tensor_list: [{shape: ..., dtype: ...}, ...]
        - value: 0                              # a plain scalar / None / bool / string
        - py: (slice(None, None, None), slice(0, 13, None))   # a Python literal
      kwargs: {dim: {value: -1}, p: 0.1}

``CallInputs.build(device, seed)`` makes ``(args, kwargs)`` with real tensors on ``device``
(CPU first, seeded, then moved: the same values for the CPU reference and the device).  The
captured ``device`` of a tensor (``cuda``, ``spyre``) is where the capture ran, not where the
test runs, and is ignored.  A ``value`` of the form ``<config:pkg.mod.Class>`` is a
HuggingFace config object: ``build`` constructs ``pkg.mod.Class()`` (its defaults) and raises
``ImportError`` when the package is not installed.  A ``value`` string holding a tuple or list
literal (``(768,)``, as captures write shapes) is that literal, one naming a dtype
(``torch.bool``) that dtype; a ``device`` keyword argument is
the device the test runs on.

Init strategies (torch-spyre ``oot_test_config_models``): ``rand`` (uniform [0, 1)), ``randn``,
``randint`` (``init_args.low``..``high``, ``high`` required), ``zeros``, ``ones``, ``full``
(``fill_value``), ``arange`` (1-D), ``eye`` (square 2-D), ``xavier`` (``xavier_uniform_``,
>= 2-D).  torch-spyre's ``file`` init (values from a ``.pt``/``.npy`` file) is not accepted: no
shared config uses it.  Dtype names are torch's (``torch.float16``, ``half``:
``dtypes.canonical_dtype``).
"""

from __future__ import annotations

import ast
import importlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from test_specs.values.dtypes import canonical_dtype

INIT_STRATEGIES = frozenset({"rand", "randn", "randint", "zeros", "ones", "full", "arange", "eye",
                             "xavier"})
CONFIG_PREFIX = "<config:"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InitArgs(_Model):
    low: float = 0
    high: float | None = None
    fill_value: float | None = None


class TensorSpec(_Model):
    """One captured tensor: ``shape``/``stride`` in elements, ``storage_offset`` in elements."""

    shape: list[int]
    dtype: str
    stride: list[int] | None = None
    storage_offset: int = Field(default=0, ge=0)
    device: str | None = None
    init: str = "rand"
    init_args: InitArgs = Field(default_factory=InitArgs)
    requires_grad: bool = False

    @field_validator("dtype")
    @classmethod
    def _v_dtype(cls, v: str) -> str:
        return canonical_dtype(v)

    @field_validator("shape")
    @classmethod
    def _v_shape(cls, v: list[int]) -> list[int]:
        if any(d < 0 for d in v):
            raise ValueError(f"shape dimensions must be >= 0, got {v}")
        return v

    @field_validator("init")
    @classmethod
    def _v_init(cls, v: str) -> str:
        if v not in INIT_STRATEGIES:
            raise ValueError(f"unknown init {v!r}; expected one of {sorted(INIT_STRATEGIES)}")
        return v

    @model_validator(mode="after")
    def _v_cross(self) -> TensorSpec:
        if self.stride is not None and len(self.stride) != len(self.shape):
            raise ValueError(f"stride {self.stride} must have one entry per dimension of shape {self.shape}")
        if self.init == "randint" and self.init_args.high is None:
            raise ValueError("init randint needs init_args.high")
        if self.init == "full" and self.init_args.fill_value is None:
            raise ValueError("init full needs init_args.fill_value")
        if self.init == "arange" and len(self.shape) != 1:
            raise ValueError(f"init arange needs a 1-D shape, got {self.shape}")
        if self.init == "xavier" and len(self.shape) < 2:
            raise ValueError(f"init xavier needs a shape of >= 2 dimensions, got {self.shape}")
        if self.init == "eye" and (len(self.shape) != 2 or self.shape[0] != self.shape[1]):
            raise ValueError(f"init eye needs a square 2-D shape, got {self.shape}")
        return self

    def numel_storage(self) -> int:
        """Elements the backing storage needs for ``shape``/``stride``/``storage_offset``."""
        if self.stride is None:
            n = 1
            for d in self.shape:
                n *= d
            return n + self.storage_offset
        if any(d == 0 for d in self.shape):
            return self.storage_offset
        return self.storage_offset + sum((d - 1) * s for d, s in zip(self.shape, self.stride, strict=True)) + 1

    def build(self, generator: Any) -> Any:
        """The CPU tensor (values drawn from ``generator``, a ``torch.Generator``)."""
        import torch

        dt = getattr(torch, self.dtype)
        if self.stride is None and not self.storage_offset:
            t = _fill(self.init, self.shape, dt, self.init_args, generator)
        elif self.init in _SHAPED:  # values depend on the shape: fill a contiguous one, then lay out
            backing = torch.zeros(self.numel_storage(), dtype=dt)
            t = torch.as_strided(backing, self.shape, self.stride or _contiguous(self.shape), self.storage_offset)
            t.copy_(_fill(self.init, self.shape, dt, self.init_args, generator))
        else:  # elementwise inits fill the whole storage (stride 0 / overlapping layouts stay valid)
            backing = _fill(self.init, [self.numel_storage()], dt, self.init_args, generator)
            t = torch.as_strided(backing, self.shape, self.stride or _contiguous(self.shape), self.storage_offset)
        return t.requires_grad_(self.requires_grad) if dt.is_floating_point else t


_SHAPED = frozenset({"arange", "eye", "xavier"})


def _contiguous(shape: list[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= max(d, 1)
    return out[::-1]


def _fill(init: str, shape: list[int], dt: Any, ia: InitArgs, g: Any) -> Any:
    import torch

    if init == "zeros":
        return torch.zeros(shape, dtype=dt)
    if init == "ones":
        return torch.ones(shape, dtype=dt)
    if init == "full":
        return torch.full(shape, ia.fill_value, dtype=dt)
    if init == "arange":
        return torch.arange(shape[0], dtype=dt)
    if init == "eye":
        return torch.eye(shape[0], dtype=dt)
    if init == "xavier":
        return torch.nn.init.xavier_uniform_(torch.empty(shape, dtype=torch.float32), generator=g).to(dt)
    if init == "randint":
        return torch.randint(int(ia.low), int(ia.high or 0), shape, generator=g).to(dt)
    if dt.is_floating_point:
        fn = torch.randn if init == "randn" else torch.rand
        return fn(shape, generator=g, dtype=torch.float32).to(dt)
    if dt == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    return torch.randint(0, 10, shape, generator=g).to(dt)


class ArgSpec(_Model):
    """Exactly one of ``tensor``, ``tensor_list``, ``value`` or ``py``."""

    tensor: TensorSpec | None = None
    tensor_list: list[TensorSpec] | None = None
    value: Any = None
    py: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _v_shape(cls, v: Any) -> Any:
        if not isinstance(v, dict):  # a bare scalar kwarg (``p: 0.1``) is a value
            return {"value": v}
        given = [k for k in ("tensor", "tensor_list", "value", "py") if k in v]
        if len(given) != 1:
            raise ValueError(f"an argument needs exactly one of tensor, tensor_list, value, py; got {sorted(v)}")
        return v

    @field_validator("py")
    @classmethod
    def _v_py(cls, v: str | None) -> str | None:
        if v is not None:
            _literal(v)
        return v

    def build(self, device: str, generator: Any) -> Any:
        if self.tensor is not None:
            return self.tensor.build(generator).to(device)
        if self.tensor_list is not None:
            return [t.build(generator).to(device) for t in self.tensor_list]
        if self.py is not None:
            return _literal(self.py)
        if isinstance(self.value, str) and self.value.startswith(CONFIG_PREFIX):
            return _config_object(self.value)
        if isinstance(self.value, str) and self.value.startswith("torch."):  # ``dtype: torch.bool``
            try:
                import torch

                return getattr(torch, canonical_dtype(self.value))
            except ValueError:
                return self.value
        if isinstance(self.value, str) and self.value[:1] in "([":  # a captured tuple: ``(768,)``
            try:
                return _literal(self.value)
            except ValueError:
                return self.value
        return self.value


def _literal(text: str) -> Any:
    """A Python literal (``ast.literal_eval``) that may also use ``slice(...)`` and ``Ellipsis``.
    Raises ``ValueError`` for anything else (no names, no calls but ``slice``)."""
    tree = ast.parse(text, mode="eval")

    def ev(n: ast.AST) -> Any:
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "slice" and not n.keywords:
            return slice(*(ev(a) for a in n.args))
        if isinstance(n, ast.Name) and n.id == "Ellipsis":
            return Ellipsis
        if isinstance(n, ast.Tuple):
            return tuple(ev(e) for e in n.elts)
        if isinstance(n, ast.List):
            return [ev(e) for e in n.elts]
        return ast.literal_eval(n)

    try:
        return ev(tree.body)
    except (ValueError, TypeError, SyntaxError) as e:
        raise ValueError(f"not a Python literal: {text!r} ({e})") from None


def _config_object(value: str) -> Any:
    path = value[len(CONFIG_PREFIX):].rstrip(">")
    mod, _, cls = path.rpartition(".")
    return getattr(importlib.import_module(mod), cls)()


class CallInputs(_Model):
    """``args`` and ``kwargs`` of one captured call."""

    args: list[ArgSpec] = Field(default_factory=list)
    kwargs: dict[str, ArgSpec] = Field(default_factory=dict)

    def tensors(self) -> list[TensorSpec]:
        """Every captured tensor, args first."""
        out: list[TensorSpec] = []
        for a in [*self.args, *self.kwargs.values()]:
            out += [a.tensor] if a.tensor is not None else list(a.tensor_list or [])
        return out

    def build(self, device: str, seed: int | None = None) -> tuple[list[Any], dict[str, Any]]:
        """``(args, kwargs)`` with tensors on ``device``; the same ``seed`` gives the same values."""
        import torch

        g = torch.Generator().manual_seed(0 if seed is None else seed)
        kwargs = {k: device if k == "device" else a.build(device, g) for k, a in self.kwargs.items()}
        return [a.build(device, g) for a in self.args], kwargs


def import_object(path: str) -> Any:
    """``pkg.mod.Name`` (or ``pkg.Class.attr``) imported: the longest importable module prefix,
    then attributes; raises ``ImportError``/``AttributeError`` naming the path."""
    parts = path.split(".")
    if len(parts) < 2:
        raise ImportError(f"{path!r} is not a dotted path 'package.module.Name'")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            if cut == 1:
                raise
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(path)  # pragma: no cover - the loop returns or raises
