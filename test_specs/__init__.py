"""Declarative YAML test specs (torch-spyre ``test_suite_config`` format + our superset).

Public API (import from the submodules; this package imports nothing heavy):

- ``test_specs.loader``: ``load_spec(path) -> Spec``; ``test_specs.check``:
  ``check_specs(paths, strict=False) -> list[SpecError]`` (``SpecError.format()`` =
  ``file:line:col: message``).
- ``test_specs.expand``: ``expand(spec_paths=None, *, upstream=None) -> list[SpecItem]``,
  ``spec_paths_default()``.
- ``test_specs.runner``: ``run_items(item_ids, spec_paths, *, workdir, device="spyre", reruns=2,
  timeout_s=120, env=None, on_result=None, shards=1, upstream=None, python=None) ->
  list[TestResult]``, ``shard_split(item_ids, shards)``.
- ``test_specs.plugin``: the pytest plugin (``-p test_specs.plugin``; not auto-registered).
- ``test_specs.upstream``: source-tree mode (upstream test files via common_device_type).
- ``test_specs.templates`` (the registry: ``TEMPLATES``, ``register``), ``template_kit`` (what a
  template is, sample cap, comparison helpers), ``op_templates`` (compare with CPU,
  noncontiguous, out=, out= warning, variant consistency, NumPy ref), ``module_templates``
  (module forward/backward vs CPU, noncontiguous, device transfer).
- ``python -m test_specs.sweep``: run every item, store counts per outcome;
  ``python -m test_specs.generate``: regenerate ``opinfo_all.yaml``/``modules.yaml`` from a sweep.

Module map (each imports only modules listed before it; nothing here imports ``selection`` or
``relay``): ``modes``, ``items``, ``results`` (value objects), ``dtypes`` (torch dtype names),
``comments`` (YAML comment reasons) ← ``captured`` (captured call inputs) ← ``schema``
(pydantic models) ← ``yamlmarks`` (marks, duplicate keys) ← ``loader`` ← ``precedence`` (the
spec's precedence rules), ``opinfo_skips`` (upstream's own skips) ← ``template_kit`` ←
``op_templates`` / ``module_templates`` ← ``templates`` (registry) ← ``marks``, ``records``
(results from pytest-reportlog) ← ``containment`` (crash notes, hang watchdog under xdist) ←
``source_rules`` (a spec's rules for one upstream file) ← ``instantiate`` (applied while
upstream builds tests) ← ``upstream`` (source-tree pytest items), ``captured_run`` (model-ops /
module-tests entries) ← ``expand`` ← ``check`` / ``plugin`` (spec pytest items) ← ``runner``
(pytest with xdist workers, live results) ← ``sweep``; ``fidelity`` (agreement of results with
a config's declared Spyre behaviour, for ``bench/spyre_fidelity.py``); ``generate`` writes
specs from a sweep.
"""
