"""Declarative YAML test specs (torch-spyre ``test_suite_config`` format + our superset).

Rooms, lowest first; each imports only rooms listed before it (``tests/test_architecture.py``
checks it), and nothing here imports ``selection`` or ``relay``:

- ``values/`` — modes, spec items, test results, dtype names, a run's mode per item;
- ``format/`` — schema, loader (``load_spec``, ``SpecError.format()`` = ``file:line:col: message``),
  comment reasons, captured inputs, precedence rules, pytest marks;
- ``templates/`` — what a reused OpInfo / ModuleInfo test does (``registry.TEMPLATES``);
- ``reports/`` — pytest-reportlog records → ``TestResult``; crash and hang containment;
- ``upstream/`` — source-tree mode (upstream test files through ``common_device_type``);
- ``expand/`` — ``universe.expand(spec_paths=None, *, upstream=None) -> list[SpecItem]``;
- ``run/`` — ``runner.run_items(...) -> list[TestResult]``; ``python -m test_specs.run.sweep``;
- ``authoring/`` — ``check`` (``relay specs check``), ``writeback``, ``generate``,
  ``device_dtypes``, ``fidelity``;
- ``plugin`` — the pytest plugin (``-p test_specs.plugin``; not auto-registered).

``specs/`` holds the bundled spec files, ``measured/`` the sweep they were generated from.
"""
