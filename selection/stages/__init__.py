"""The four stages, one module each: ``scope`` (1), ``memory`` (2), ``classify`` (3),
``refine`` (4), and the ``budget`` cut between 3 and execution.
"""
