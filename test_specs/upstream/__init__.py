"""Source-tree mode: upstream PyTorch test files (``path:`` entries, ``${TORCH_ROOT}``) run on the
device through ``common_device_type``: a spec's rules for one upstream file (``rules``), applied
while upstream instantiates its device tests (``instantiate``), and the pytest plugin that
collects them (``tree``).
"""
