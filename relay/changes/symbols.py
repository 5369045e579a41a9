"""Changed top-level symbols of a Python file, by AST comparison (formatting never counts).

Symbols reported for one module (decided here; see ``examples/changes/README.md``):

* ``name`` — each module-level ``def`` / ``async def`` / ``class`` and each assignment target
  (``x = …``, ``x: T = …``, ``x += …``; tuple targets give every name, ``a.b = …`` gives ``a.b``,
  ``d[k] = …`` gives ``d``).  Definitions nested in module-level ``if`` / ``try`` / ``with``
  blocks count as module-level (e.g. ``if TYPE_CHECKING:`` or ``try: … except ImportError:``).
* ``Class.member`` — additionally, each ``def`` / ``class`` directly in a class body that changed.
  A changed method therefore reports both ``Class`` and ``Class.method``.
* ``list_name[entry]`` — additionally, for a module-level list/tuple literal containing calls to
  ``…Info(…)`` constructors (``op_db``, ``python_ref_db``, ``module_db``, ``optim_db``, …) each
  changed entry, named like upstream's ``OpInfo.full_name``: the first positional argument or
  ``name=`` (string value, or the source text with a leading ``torch.`` dropped, so
  ``ModuleInfo(torch.nn.Linear, …)`` is ``module_db[nn.Linear]``), plus ``.variant_test_name``
  when given: ``op_db[softmax]``, ``op_db[normal.in_place]``.  An element that is not such a
  call but contains one (``*(OpInfo('index_reduce', variant_test_name=r, …) for r in …)``) is
  named by that call, a computed variant shown as ``*`` (``op_db[index_reduce.*]``); other
  elements by their source text (``op_db[*extra_ops]``).  ``DecorateInfo`` / ``SkipInfo``
  calls do not make a list a database.
* ``<module>`` — any other module-level statement changed (calls, loops, ``del``, the condition
  of an ``if`` / ``with`` / ``except`` block).  Imports and the module docstring are ignored.

Two versions of a symbol are equal when their statements' source text is identical, or else
when ``ast.dump(node, include_attributes=False)`` is; a name defined several times is compared
as the sequence of its definitions.  A class or database list is compared with its members
replaced by their names, so a changed member does not require comparing the whole container.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import gc
from collections.abc import Iterator
from dataclasses import dataclass, field

from relay.errors import SymbolError

MODULE = "<module>"
#: ``…Info`` calls that are decorations of an entry, not entries of a database list
_NOT_ENTRIES = frozenset({"DecorateInfo", "SkipInfo", "XFailInfo", "SampleInput"})


@dataclass(slots=True)
class _Piece:
    text: list[bytes]          # the whole source lines the node spans
    pos: tuple[int, int, int]  # end_lineno - lineno, col_offset, end_col_offset
    node: ast.AST              # for containers: a shell with members replaced by their names


def _equal(a: object, b: object) -> bool:
    """``ast.dump(a, include_attributes=False) == ast.dump(b, …)``, short-circuiting."""
    if type(a) is not type(b):
        return False
    if isinstance(a, ast.AST):
        return all(_equal(getattr(a, f, None), getattr(b, f, None)) for f in a._fields)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_equal, a, b))  # type: ignore[arg-type]
    return a == b


def _member(name: str) -> ast.expr:
    return ast.Constant(value=f"<member {name}>")


@dataclass
class SymbolTable:
    """``pieces[name]``: the definitions of one symbol, in source order; ``parent[name]`` links a
    ``Class.method`` / ``op_db[entry]`` symbol to its container symbol."""

    pieces: dict[str, list[_Piece]] = field(default_factory=dict)
    parent: dict[str, str] = field(default_factory=dict)


def _info_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name.endswith("Info") and name not in _NOT_ENTRIES


def _entry_key(node: ast.expr) -> str:
    if not isinstance(node, ast.Call):
        # ``*(OpInfo('index_reduce', variant_test_name=r, …) for r in …)``: name by the inner call
        inner = next((n for n in ast.walk(node) if _info_call(n)), None)
        if inner is not None:
            return _entry_key(inner)  # type: ignore[arg-type]
    if isinstance(node, ast.Call):
        first = node.args[0] if node.args and not isinstance(node.args[0], ast.Starred) else None
        kws = {k.arg: k.value for k in node.keywords if k.arg}
        first = first if first is not None else kws.get("name")
        if first is None:
            key = ast.unparse(node.func) + "(…)"
        elif isinstance(first, ast.Constant) and isinstance(first.value, str):
            key = first.value
        else:
            key = ast.unparse(first).removeprefix("torch.")
        variant = kws.get("variant_test_name")
        if isinstance(variant, ast.Constant) and isinstance(variant.value, str):
            key = f"{key}.{variant.value}" if variant.value else key
        elif variant is not None:
            key = f"{key}.*"  # computed variant name (a comprehension over variants)
        return key
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "…"


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _target_names(elt)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, ast.Subscript):
        return _target_names(target.value)
    if isinstance(target, ast.Attribute):
        base = _target_names(target.value)
        if len(base) == 1 and isinstance(target.value, (ast.Name, ast.Attribute)):
            return [f"{base[0]}.{target.attr}"]
        return base
    return [MODULE]


class _Collector:
    def __init__(self, source: bytes) -> None:
        self.lines = source.splitlines(keepends=True)
        self.table = SymbolTable()

    def add(self, name: str, node: ast.AST, parent: str | None = None,
            shell: ast.AST | None = None) -> None:
        start = node.lineno
        col = node.col_offset
        for deco in getattr(node, "decorator_list", ()):
            if deco.lineno < start:
                start, col = deco.lineno, deco.col_offset - 1  # the '@'
        end = node.end_lineno or node.lineno
        piece = _Piece(self.lines[start - 1:end], (end - start, col, node.end_col_offset or 0),
                       shell if shell is not None else node)
        self.table.pieces.setdefault(name, []).append(piece)
        if parent is not None:
            self.table.parent[name] = parent

    def body(self, stmts: list[ast.stmt], *, top: bool = False) -> None:
        for i, stmt in enumerate(stmts):
            if top and i == 0 and isinstance(stmt, ast.Expr) and isinstance(
                    stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                continue  # module docstring
            self.stmt(stmt)

    def stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.add(stmt.name, stmt)
        elif isinstance(stmt, ast.ClassDef):
            # the class is compared with its members replaced by their names; members apart
            shell = copy.copy(stmt)
            shell.body = []
            for sub in stmt.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self.add(f"{stmt.name}.{sub.name}", sub, stmt.name)
                    shell.body.append(ast.Expr(_member(sub.name)))
                else:
                    shell.body.append(sub)
            self.add(stmt.name, stmt, shell=shell)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [n for t in targets for n in _target_names(t)]
            value = stmt.value
            if (len(names) == 1 and names[0] != MODULE and isinstance(value, (ast.List, ast.Tuple))
                    and any(_info_call(e) for e in value.elts)):
                shell = copy.copy(stmt)
                shell.value = copy.copy(value)
                shell.value.elts = []
                for elt in value.elts:
                    key = f"{names[0]}[{_entry_key(elt)}]"
                    self.add(key, elt, names[0])
                    shell.value.elts.append(_member(key))
                self.add(names[0], stmt, shell=shell)
                return
            for name in dict.fromkeys(names):
                self.add(name, stmt)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
            pass
        elif isinstance(stmt, ast.If):
            self.add(MODULE, stmt.test)
            self.body(stmt.body)
            self.body(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.add(MODULE, item.context_expr)
            self.body(stmt.body)
        elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.body(stmt.body)
            for handler in stmt.handlers:
                if handler.type is not None:
                    self.add(MODULE, handler.type)
                self.body(handler.body)
            self.body(stmt.orelse)
            self.body(stmt.finalbody)
        else:
            self.add(MODULE, stmt)


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """ASTs hold no reference cycles; collector passes over them cost ~40 % of parse time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def symbol_table(source: bytes | str) -> SymbolTable:
    """Parse one module's source and collect its symbols (see the module docstring).

    Raises ``SymbolError`` if the source does not parse (``SyntaxError``, null bytes, undecodable
    text, recursion limit)."""
    if isinstance(source, str):
        source = source.encode("utf-8")
    try:
        with _no_gc():
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise SymbolError(f"{type(exc).__name__}: {exc}") from None
    collector = _Collector(source)
    collector.body(tree.body, top=True)
    return collector.table


def _same(a: list[_Piece], b: list[_Piece]) -> bool:
    if len(a) != len(b):
        return False
    for pa, pb in zip(a, b, strict=True):
        if pa.pos == pb.pos and pa.text == pb.text:
            continue
        if not _equal(pa.node, pb.node):
            return False
    return True


def diff_tables(old: SymbolTable, new: SymbolTable) -> list[str]:
    """Names whose definitions differ between two tables (added and removed ones included),
    sorted.  A container (class, ``op_db``) with a changed member is changed too."""
    changed: set[str] = set()
    names = set(old.pieces) | set(new.pieces)
    children = [n for n in names if n in old.parent or n in new.parent]
    for name in children:
        if not _same(old.pieces.get(name, []), new.pieces.get(name, [])):
            changed.add(name)
            changed.add(old.parent.get(name) or new.parent[name])
    for name in names.difference(children, changed):
        if not _same(old.pieces.get(name, []), new.pieces.get(name, [])):
            changed.add(name)
    return sorted(changed)


def changed_symbols(old: bytes | str | None, new: bytes | str | None) -> list[str]:
    """Changed symbols between two versions of one module (``None`` = the file does not exist
    on that side, so an added file reports all its symbols and a removed file all the old ones).

    Raises ``SymbolError`` when either side does not parse or cannot be compared."""
    with _no_gc():
        old_t = symbol_table(old) if old is not None else SymbolTable()
        new_t = symbol_table(new) if new is not None else SymbolTable()
        try:
            return diff_tables(old_t, new_t)
        except RecursionError:
            raise SymbolError("RecursionError: expression nested too deeply to compare") from None
