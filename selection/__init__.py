"""Test selection: which upstream tests a change can break, in four stages.

Rooms, lowest first; each imports only rooms listed before it (``tests/test_architecture.py``):

- ``models`` (``ChangeSet`` in, ``Selection`` out) and ``stage`` (the interface the stages
  share, ``SelectionState``);
- ``index/`` — the test → aten-op index (repository memory, part 1), device support answers;
- ``attribution/`` — changed files and symbols → aten ops, OpInfos, modules (part 2);
- ``policy/`` — areas of paths and tests, backend profiles, canaries, upgrade mode;
- ``heuristics/`` — stage 3's scorers, one small class each, in a plain list;
- ``stages/`` — ``scope`` (1), ``memory`` (2), ``classify`` (3), ``refine`` (4), ``budget``;
- ``pipeline`` — ``Selector``: stages 1–3 per change, stage 4 per run.
"""
