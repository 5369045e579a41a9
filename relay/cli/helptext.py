"""Help that reads like ``git``'s: a one-line summary, ``usage: relay CMD [OPTIONS] ARG``, the
details rewrapped as paragraphs (never broken mid-sentence where the docstring's lines ended),
examples kept as written, and each value named by what it is (``--spec SPEC``, ``--limit N``)
rather than by its Python type (typer's ``<str>`` / ``<bool>``, a required argument as ``{REF}``).

Every ``relay`` command is declared with ``cls=RelayCommand`` (the groups are typer's, with
``rich_markup_mode=None``: click's plain help); ``tests/e2e/test_cli_help.py`` reads
``relay CMD --help`` through the real entry point.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand

__all__ = ["RelayCommand", "SUMMARY_MAX"]

#: the widest one-line summary, so ``relay --help`` lists each in full on 80 columns
SUMMARY_MAX = 60

#: the name of a value by option name (the type decides otherwise: N, SECONDS, PATH, TEXT)
_BY_NAME = {
    "spec": "SPEC", "head_env": "ENV", "base_env": "ENV", "upstream": "PATH", "source_root": "PATH",
    "out": "FILE", "junit": "FILE", "workdir": "DIR", "root": "DIR", "payload": "FILE",
    "src_from": "SRC", "src_to": "SRC", "diff": "FILE", "files": "FILE", "changes": "FILE",
    "title": "TEXT", "backend": "NAME", "device": "DEVICE", "host": "ADDR", "port": "PORT",
    "timeout": "SECONDS", "budget_minutes": "MINUTES", "repo": "OWNER/REPO", "since": "ISO-TIME",
    "hook_id": "ID", "loglevel": "LEVEL", "hostname": "NAME", "pool": "POOL", "url": "URL",
}
_BY_TYPE = {"int": "N", "float": "NUMBER", "Path": "PATH"}


def _is_argument(param: Any) -> bool:
    return param.param_type_name == "argument"


def _value_name(param: Any) -> str:
    if param.name in _BY_NAME:
        return _BY_NAME[param.name]
    bare = param.bare_type() if hasattr(param, "bare_type") else ""
    return _BY_TYPE.get(bare.removeprefix("list[").removesuffix("]"), "TEXT")


def _name_values(params: list[Any]) -> None:
    """Give each argument and valued option a metavar (flags keep none)."""
    for param in params:
        if param.metavar is not None:
            continue
        if _is_argument(param):
            param.metavar = (param.name or "ARG").upper()
        elif not getattr(param, "is_flag", False) and not getattr(param, "count", False):
            param.metavar = _value_name(param)


class RelayCommand(TyperCommand):
    """A typer command whose help is plain click help with git's conventions (module doc)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _name_values(self.params)

    def collect_usage_pieces(self, ctx: typer.Context) -> list[str]:
        """``[OPTIONS] REF`` (required) / ``[PATH]...`` (optional, repeated)."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if _is_argument(param):
                piece = param.metavar or (param.name or "ARG").upper()
                piece = piece if param.required else f"[{piece}]"
                pieces.append(piece + ("..." if param.nargs != 1 else ""))
        return pieces

    def format_options(self, ctx: typer.Context, formatter: Any) -> None:
        """Arguments by name (no type), then options as click writes them."""
        args, opts = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if _is_argument(param):
                args.append((param.metavar or record[0], record[1]))
            else:
                opts.append(record)
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
