"""Repository memory, part 2: changed upstream files and symbols → the aten ops, OpInfos and
modules they affect (``rules``), from the source map (``source_map``), native kernel names
(``native``, ``native_families``), the module graph (``module_graph``) and patch symbols.
"""
