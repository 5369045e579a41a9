"""Pydantic schema of a spec file: torch-spyre's ``test_suite_config`` plus our superset.

The upstream format is torch-spyre's ``tests/oot_framework`` YAML (RFC 1287)::

    test_suite_config:
      labels: [...]
      files:
        - path: ${TORCH_ROOT}/test/test_binary_ufuncs.py   # may hold globs
          unlisted_test_mode: skip | xfail | xfail_strict | mandatory_success  (default xfail)
          tests:
            - names: [Class::method, ...]      # generic (un-instantiated) names
              mode: mandatory_success           # default
              tags: [...]                       # become pytest marks
              edits:
                ops:     {include: [{name, description}], exclude: [...]}
                modules: {include: [...], exclude: [...]}
                dtypes:  {include: [{name, description, precision}], exclude: [...]}
                functions: {cpu_move: [{name, description}]}
      global:
        supported_dtypes: [float16 | {name, precision, force_xfail}]
        supported_ops: [add | {name, force_xfail, dtypes: [{name, precision: {atol, rtol}}]}]
        supported_modules: [...]

Also torch-spyre's: dtype names with torch's aliases (``half``, ``torch.float32``; stored under
the canonical name, ``test_specs.values.dtypes``); glob/regex ``names`` (``*TestModule*::test_forward``);
module tests (``edits.modules.include[]`` with ``module_path``, ``constructor_inputs``,
``forward_inputs``) and model-ops configs (``edits.ops.include[].sample_inputs_func``, RFC-0186),
whose captured inputs are ``test_specs.format.captured`` models; reasons written as YAML comments
(``Spec.comment_reason``).  Every bad entry of a list is reported at its own line.

Our strict superset (everything above loads unchanged):

- a file entry may name ``source: op_db`` (or ``module_db``) instead of ``path``; its test
  ``names`` are our generic templates (``TestCommon::test_compare_cpu``, see ``templates.py``);
- ``reason`` and ``issue`` on tests (meaningful when ``mode`` is not ``mandatory_success``), on
  ``force_xfail`` ops/dtypes, and on file entries (for ``unlisted_test_mode``);
- ``upstream_skips: false`` on a test entry: ignore the OpInfo's own skips for
  its items (by default a ``mandatory_success`` item upstream skips becomes ``skip``).

Unknown keys are errors everywhere (``extra="forbid"``), so a typo never silently changes what
runs.  All models are frozen.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from test_specs.format.captured import CallInputs
from test_specs.values.dtypes import canonical_dtype
from test_specs.values.modes import Mode

#: ``Class::method`` or a plain module-level ``method`` (torch-spyre accepts both); either part
#: may be a glob (``*TestModule*::test_forward``) or a regular expression (``test_rope_.*``), as
#: torch-spyre matches names holding ``* ? [ ]`` as patterns.
_TEST_NAME = re.compile(r"^(?:[\w*?\[\].+|()^$-]+::)?[\w*?\[\].+|()^$-]+$")

Source = Literal["op_db", "module_db"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _names_to_dicts(v: Any) -> Any:
    """Accept the plain form ``[add, mul]`` for ``[{name: add}, {name: mul}]`` (torch-spyre does)."""
    if isinstance(v, list):
        return [{"name": x} if isinstance(x, str) else x for x in v]
    return v


def _check_dtype(name: str) -> str:
    """The canonical torch dtype name of ``name`` (aliases such as ``half`` accepted)."""
    return canonical_dtype(name)


def _check_test_name(n: str) -> str:
    if not _TEST_NAME.match(n):
        raise ValueError(f"invalid test name {n!r}; expected 'Class::method' or 'method' (globs allowed)")
    return n


TestName = Annotated[str, AfterValidator(_check_test_name)]


class Precision(_Model):
    """Tolerance override; an unset field falls back to the default for the dtype."""

    atol: float | None = Field(default=None, ge=0)
    rtol: float | None = Field(default=None, ge=0)


class Named(_Model):
    """An entry of an ``include``/``exclude`` list."""

    name: str
    description: str | None = None


class OpNamed(Named):
    """An op in ``edits.ops.include``/``exclude``: OpInfo ``name`` (all its variants) or
    ``name.variant``; ``exact: true`` (our superset) makes ``name`` select only the OpInfo without
    a variant (``softmax`` but not ``softmax.with_dtype``); ``tags`` add marks."""

    tags: list[str] = Field(default_factory=list)
    exact: bool = False
    #: model-ops configs (torch-spyre RFC-0186): the captured inputs of one call of the op
    #: ``name`` (a dotted callable such as ``torch.nn.functional.linear``) inside a model.
    sample_inputs_func: CallInputs | None = None


class ModuleNamed(Named):
    """A module in ``edits.modules.include``/``exclude``: a ModuleInfo name (``nn.Linear``) or,
    torch-spyre's module tests, any ``nn.Module`` class at ``module_path`` built with
    ``constructor_inputs`` and called with each of ``forward_inputs`` (captured in a model)."""

    module_path: str | None = None
    constructor_inputs: CallInputs = Field(default_factory=CallInputs)
    forward_inputs: list[CallInputs] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)


class DtypeNamed(Named):
    """A dtype in ``edits.dtypes`` or ``global.supported_dtypes``."""

    precision: Precision | None = None
    force_xfail: bool = False
    reason: str | None = None
    issue: str | None = None

    @field_validator("name")
    @classmethod
    def _v_name(cls, v: str) -> str:
        return _check_dtype(v)


class OpsEdits(_Model):
    include: list[OpNamed] = Field(default_factory=list)
    exclude: list[OpNamed] = Field(default_factory=list)


class ModulesEdits(_Model):
    include: list[ModuleNamed] = Field(default_factory=list)
    exclude: list[ModuleNamed] = Field(default_factory=list)


class DtypesEdits(_Model):
    include: list[DtypeNamed] = Field(default_factory=list)
    exclude: list[DtypeNamed] = Field(default_factory=list)


class FunctionsEdits(_Model):
    """``cpu_move``: assertion helpers whose tensor arguments are moved to CPU first."""

    cpu_move: list[Named] = Field(default_factory=list)


class Edits(_Model):
    ops: OpsEdits = Field(default_factory=OpsEdits)
    modules: ModulesEdits = Field(default_factory=ModulesEdits)
    dtypes: DtypesEdits = Field(default_factory=DtypesEdits)
    functions: FunctionsEdits = Field(default_factory=FunctionsEdits)


class TestEntry(_Model):
    """One group of tests sharing mode, tags and edits (torch-spyre ``tests[]``)."""

    __test__ = False

    names: list[TestName]
    mode: Mode = "mandatory_success"
    tags: list[str] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)
    no_grad: bool = False
    edits: Edits = Field(default_factory=Edits)
    reason: str | None = None
    issue: str | None = None
    #: our superset: ``false`` runs this entry's ``mandatory_success`` items even where the
    #: OpInfo's own ``DecorateInfo`` skips or expects the upstream test to fail (``opinfo_skips``).
    upstream_skips: bool = True

    @field_validator("names", mode="before")
    @classmethod
    def _one_name(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("names")
    @classmethod
    def _name_shape(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("names must not be empty")
        return v


class FileEntry(_Model):
    """A test file (``path``) or, our superset, a database ``source``; exactly one of the two."""

    path: str | None = None
    source: Source | None = None
    unlisted_test_mode: Mode = "xfail"  # torch-spyre's default
    reason: str | None = None
    issue: str | None = None
    tests: list[TestEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _path_xor_source(self) -> FileEntry:
        if (self.path is None) == (self.source is None):
            raise ValueError("a file entry needs exactly one of 'path' or 'source'")
        return self


class OpDtype(_Model):
    name: str
    precision: Precision | None = None

    @field_validator("name")
    @classmethod
    def _v_name(cls, v: str) -> str:
        return _check_dtype(v)


class SupportedOp(_Model):
    """``global.supported_ops[]``: ``dtypes`` (if given) restricts the op's dtypes."""

    name: str
    force_xfail: bool = False
    reason: str | None = None
    issue: str | None = None
    dtypes: list[OpDtype] = Field(default_factory=list)

    @field_validator("dtypes", mode="before")
    @classmethod
    def _v_dtypes(cls, v: Any) -> Any:
        return _names_to_dicts(v)

    def precision(self, dtype: str) -> Precision | None:
        """This op's ``precision`` override for ``dtype`` (a torch dtype name), if listed."""
        return next((d.precision for d in self.dtypes if d.name == dtype), None)


class InputConfig(_Model):
    """``seed`` (torch-spyre); ``max_samples`` (our superset): at most this many sample inputs
    per item (OpInfo samples / ModuleInputs, in database order); unset = all (as upstream)."""

    seed: int | None = None
    max_samples: int | None = Field(default=None, ge=1)


class GlobalConfig(_Model):
    supported_dtypes: list[DtypeNamed] = Field(default_factory=list)
    supported_ops: list[SupportedOp] | None = None
    supported_modules: list[SupportedOp] | None = None
    input_config: InputConfig = Field(default_factory=InputConfig)

    @field_validator("supported_dtypes", "supported_ops", "supported_modules", mode="before")
    @classmethod
    def _v_lists(cls, v: Any) -> Any:
        return _names_to_dicts(v)

    def op(self, name: str, variant: str = "") -> SupportedOp | None:
        """The ``supported_ops`` entry for OpInfo ``name``/``variant``: ``name.variant`` first."""
        ops = self.supported_ops or []
        if variant:
            hit = next((o for o in ops if o.name == f"{name}.{variant}"), None)
            if hit is not None:
                return hit
        return next((o for o in ops if o.name == name), None)

    def dtype(self, name: str) -> DtypeNamed | None:
        """The ``supported_dtypes`` entry named ``name`` (e.g. ``"float16"``), if listed."""
        return next((d for d in self.supported_dtypes if d.name == name), None)


class SuiteConfig(_Model):
    labels: list[str] = Field(default_factory=list)
    files: list[FileEntry] = Field(default_factory=list)
    global_: GlobalConfig = Field(default_factory=GlobalConfig, alias="global")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class SpecDocument(_Model):
    """The whole YAML document: a single root key ``test_suite_config``."""

    test_suite_config: SuiteConfig
