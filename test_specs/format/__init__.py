"""The spec format itself (torch-spyre's ``test_suite_config``, RFC 1287, and our superset): the
pydantic schema, the YAML loader that keeps line marks and reports every error, reasons written
as comments, captured call inputs, the precedence rules that give an item its mode and dtypes,
and the pytest marks an item carries.
"""
