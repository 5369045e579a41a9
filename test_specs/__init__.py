"""Declarative YAML test specs (torch-spyre ``test_suite_config`` format + our superset).

Public API (import from the submodules; this package imports nothing heavy):

- ``test_specs.loader``: ``load_spec(path) -> Spec``, ``check_specs(paths, strict=False) ->
  list[SpecError]`` (``SpecError.format()`` = ``file:line:col: message``).
- ``test_specs.expand``: ``expand(spec_paths=None) -> list[SpecItem]``, ``spec_paths_default()``.
- ``test_specs.runner``: ``run_items(item_ids, spec_paths, *, workdir, ...) -> list[TestResult]``.
- ``test_specs.plugin``: the pytest plugin (``-p test_specs.plugin``; not auto-registered).
- ``test_specs.templates``: the generic test templates (``TestCommon::test_compare_cpu``).

Module map: ``schema`` (pydantic models) ← ``yamlmarks`` (marks, duplicate keys) ← ``loader``
← ``expand`` (precedence rules) ← ``plugin`` (pytest items) ← ``runner`` (subprocess, results).
"""
