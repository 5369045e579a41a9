"""What pytest reports become: ``TestResult``s read from pytest-reportlog (``records``), and the
crash and hang notes of a run under pytest-xdist (``containment``).
"""
