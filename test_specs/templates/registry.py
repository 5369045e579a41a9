"""The template registry: every test template by its generic name, in one plain dict.

A spec's ``tests[].names`` refer to templates by their generic upstream name
(``TestCommon::test_compare_cpu``).  ``TEMPLATES`` maps each name to its ``Template``
(``test_specs.templates.kit``, which also says what a template is and what it raises); the
implementations live in ``op_templates`` (OpInfo templates) and ``module_templates``
(ModuleInfo templates), each exporting a plain list this module collects — the pattern of
``selection.heuristics``.

To add a template: write the function in ``op_templates`` / ``module_templates`` and add its
``Template`` (upstream test, allowed dtypes, optional ``applies`` predicate, ``builtin``) to that
module's list.

Extra templates outside the package (the test suite's fault-injection templates): modules named
in the environment variable ``SPYRE_SPEC_TEMPLATES`` (comma-separated import paths) call
``register``; ``load_extra_templates()`` imports them.  Give them ``builtin=False`` so they are
never expanded unless a spec lists them.
"""

from __future__ import annotations

import importlib
import os

from test_specs.templates.kit import Template
from test_specs.templates.modules import MODULE_TEMPLATES
from test_specs.templates.ops import OP_TEMPLATES

#: Generic name → template.  Order: ``test_compare_cpu``, the module templates, the other op
#: templates (the order they were registered in before the registry became a plain dict).
TEMPLATES: dict[str, Template] = {t.name: t for t in [OP_TEMPLATES[0], *MODULE_TEMPLATES, *OP_TEMPLATES[1:]]}


def register(t: Template) -> Template:
    """Add ``t`` to ``TEMPLATES`` (for extra template modules); returns ``t``.

    Re-registering a name from the same module (a module re-import) replaces the entry.

    Raises:
        ValueError: the name is already registered by a different module.
    """
    old = TEMPLATES.get(t.name)
    if old is not None and old.fn.__module__ != t.fn.__module__:
        raise ValueError(f"template {t.name!r} registered by {old.fn.__module__} and {t.fn.__module__}")
    TEMPLATES[t.name] = t
    return t


def load_extra_templates() -> None:
    """Import the modules named in ``SPYRE_SPEC_TEMPLATES`` (comma-separated); idempotent.

    Raises whatever importing such a module raises (``ModuleNotFoundError`` for a wrong name).
    """
    for mod in filter(None, (m.strip() for m in os.environ.get("SPYRE_SPEC_TEMPLATES", "").split(","))):
        importlib.import_module(mod)
