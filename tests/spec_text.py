"""The YAML text of the small op_db spec most tests run: ``TestCommon::test_compare_cpu`` on
the listed OpInfo names, everything else in the file skipped at collection.

``compare_cpu_spec(["add", "mul"])`` is a complete ``test_suite_config`` (torch-spyre's RFC 1287
format): one ``source: op_db`` file with ``unlisted_test_mode: skip``, one test entry injecting
``include`` (and dropping ``exclude``) OpInfo names, ``extra`` appended as further test entries
(YAML text indented as entries of ``tests:``), and ``global.supported_dtypes`` = ``dtypes``
(``None``: no ``global`` section)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["compare_cpu_spec"]


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"{{name: {n}}}" for n in names)


def compare_cpu_spec(include: Sequence[str], *, exclude: Sequence[str] = (),
                     dtypes: Sequence[str] | None = ("float16",), extra: str = "") -> str:
    """The spec text (see the module docstring)."""
    text = ("test_suite_config:\n"
            "  files:\n"
            "    - source: op_db\n"
            "      unlisted_test_mode: skip\n"
            "      reason: only compare_cpu here\n"
            "      issue: test fixture\n"
            "      tests:\n"
            "        - names: [TestCommon::test_compare_cpu]\n"
            "          edits:\n"
            "            ops:\n"
            f"              include: [{_names(include)}]\n")
    if exclude:
        text += f"              exclude: [{_names(exclude)}]\n"
    text += extra
    if dtypes is not None:
        text += f"  global:\n    supported_dtypes: [{', '.join(dtypes)}]\n"
    return text
