"""Repository memory, part 1: the test → aten-op index captured with ``TorchDispatchMode``
(``op_index``, modules by ``module_capture``), the device's op support answers (``support``) and
the atomic cache files they are kept in (``cachefile``).
"""
