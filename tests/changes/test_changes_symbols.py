"""AST symbol comparison: formatting never counts, bodies do, OpInfo entries by name."""

from __future__ import annotations

import textwrap

import pytest

from relay.changes import SymbolError, changed_symbols


def syms(old: str | None, new: str | None) -> list[str]:
    return changed_symbols(None if old is None else textwrap.dedent(old),
                           None if new is None else textwrap.dedent(new))


def test_formatting_only_change_gives_no_symbol() -> None:
    old = """
    '''doc'''
    import os
    def f(a, b):
        return a+b   # sum
    X = [1,2,
         3]
    """
    new = """
    '''other doc'''
    import os, sys


    def f(a,
          b):
        # a comment moved the body down
        return (a + b)
    X = [1, 2, 3]
    """
    assert syms(old, new) == []


def test_changed_body_reports_that_symbol_only() -> None:
    old = "def f():\n    return 1\n\ndef g():\n    return 2\n"
    new = "def g():\n    return 2\n\ndef f():\n    return 3\n"  # moved and changed
    assert syms(old, new) == ["f"]


def test_decorator_change_counts() -> None:
    assert syms("@a\ndef f(): pass\n", "@b\ndef f(): pass\n") == ["f"]


def test_assignments_async_and_annotations() -> None:
    old = "A = 1\nB: int = 2\nc, d = 1, 2\nasync def h(): pass\nobj.attr = 1\n"
    new = "A = 1\nB: int = 3\nc, d = 1, 3\nasync def h(): await x\nobj.attr = 2\n"
    assert syms(old, new) == ["B", "c", "d", "h", "obj.attr"]


def test_class_and_method() -> None:
    old = "class C:\n    x = 1\n    def m(self): return 1\n    def n(self): return 1\n"
    new = "class C:\n    x = 1\n    def m(self): return 2\n    def n(self):  return 1\n"
    assert syms(old, new) == ["C", "C.m"]
    # a change outside any method reports the class alone
    assert syms(old, old.replace("x = 1", "x = 2")) == ["C"]


def test_added_and_removed_methods() -> None:
    old = "class C:\n    def m(self): pass\n"
    new = "class C:\n    def m(self): pass\n    def k(self): pass\n"
    assert syms(old, new) == ["C", "C.k"]
    assert syms(new, old) == ["C", "C.k"]


def test_module_level_code_and_nested_blocks() -> None:
    old = "if TYPE_CHECKING:\n    def f(): pass\nelse:\n    f = 1\nregister(1)\n"
    new = "if TYPE_CHECKING:\n    def f(): return 1\nelse:\n    f = 1\nregister(2)\n"
    assert syms(old, new) == ["<module>", "f"]
    assert syms("try:\n    import a\nexcept ImportError:\n    a = None\n",
                "try:\n    import a\nexcept ImportError:\n    a = 0\n") == ["a"]


def test_added_and_removed_files_report_all_symbols() -> None:
    src = "def f(): pass\nclass C:\n    def m(self): pass\nX = 1\n"
    assert syms(None, src) == ["C", "C.m", "X", "f"]
    assert syms(src, None) == ["C", "C.m", "X", "f"]


OP_DB_OLD = """
import torch
op_db: list[OpInfo] = [
    UnaryUfuncInfo('abs', ref=np.abs, dtypes=floating_types()),
    OpInfo('softmax',
           aliases=('special.softmax',),
           supports_out=False),
    OpInfo(name='normal', variant_test_name='in_place', op=lambda x: x),
    OpInfo('nn.functional.gelu', skips=(DecorateInfo(unittest.skip("x"), 'TestA', 'test_a'),)),
    *(OpInfo('index_reduce', variant_test_name=r) for r in ('prod', 'mean')),
]
module_db: list[ModuleInfo] = [
    ModuleInfo(torch.nn.Linear, module_inputs_func=lin),
    ModuleInfo(torch.nn.ReLU, module_inputs_func=relu),
]
"""


def test_op_db_entry_changes_are_reported_by_name() -> None:
    new = (OP_DB_OLD
           .replace("supports_out=False", "supports_out=True")             # softmax changed
           .replace("'TestA'", "'TestB'")                                  # gelu skip changed
           .replace("lambda x: x", "lambda x: x * 1")                      # normal.in_place
           .replace("('prod', 'mean')", "('prod', 'mean', 'amax')")
           .replace("module_inputs_func=relu", "module_inputs_func=relu2"))
    assert syms(OP_DB_OLD, new) == [
        "module_db", "module_db[nn.ReLU]", "op_db", "op_db[index_reduce.*]",
        "op_db[nn.functional.gelu]", "op_db[normal.in_place]", "op_db[softmax]"]


def test_op_db_reformatted_or_entry_added() -> None:
    reformatted = OP_DB_OLD.replace("OpInfo('softmax',\n           aliases",
                                    "OpInfo('softmax', aliases")
    assert syms(OP_DB_OLD, reformatted) == []
    added = OP_DB_OLD.replace("    UnaryUfuncInfo('abs'", "    OpInfo('cos'),\n    UnaryUfuncInfo('abs'")
    assert syms(OP_DB_OLD, added) == ["op_db", "op_db[cos]"]


def test_decorate_info_lists_are_not_databases() -> None:
    old = "skips = [DecorateInfo(unittest.skip('a'), 'T', 't')]\n"
    assert syms(old, old.replace("'t'", "'u'")) == ["skips"]


@pytest.mark.parametrize("bad", ["def f(:\n", "x = 1\x00\n", "def f():\nreturn 1\n"])
def test_parse_errors_raise_symbol_error(bad: str) -> None:
    with pytest.raises(SymbolError):
        changed_symbols("x = 1\n", bad)
