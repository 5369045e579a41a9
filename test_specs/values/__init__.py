"""Value objects every layer above imports: modes (torch-spyre's ``mandatory_success`` /
``xfail`` / ``xfail_strict`` / ``skip``), spec items, test results, torch dtype names, and the
mode a run decided for an item (``planned``).  Imports nothing heavy (no torch, no pytest).
"""
