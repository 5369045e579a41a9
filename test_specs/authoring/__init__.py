"""Tools for people who write specs: ``check`` (``relay specs check``), ``writeback`` (applying a
run's proposals), ``generate`` (specs from a sweep), ``device_dtypes`` (dtype warnings) and
``fidelity`` (agreement of results with a torch-spyre config's declared behaviour).
"""
