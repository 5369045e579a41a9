"""Running spec items: ``runner.run_items`` (pytest with xdist workers, live results) and
``python -m test_specs.run.sweep`` (every item, counts per outcome).
"""
