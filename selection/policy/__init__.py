"""Decisions shared by the stages: which test area a path or a test belongs to (``areas``), which
areas a backend wants (``profile``), the canary cross-section for shared machinery (``canary``)
and upgrade mode (``upgrade``).
"""
