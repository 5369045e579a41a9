"""ChangeSet builder: the files (and changed Python symbols) between two wheels, extracted trees
or git revisions.  ``build_changeset(src_from, src_to)`` is what ``relay changes`` calls.
"""

from relay.changes.builder import ChangeReport, build_changeset, diff_sources
from relay.changes.gitsource import GitSource
from relay.changes.opening import describe_source, open_source
from relay.changes.sources import (
                                   ChangeSourceError,
                                   FileEntry,
                                   Source,
                                   TreeSource,
                                   WheelSource,
)
from relay.changes.symbols import SymbolError, changed_symbols

__all__ = [
    "ChangeReport", "ChangeSourceError", "FileEntry", "GitSource", "Source", "SymbolError",
    "TreeSource", "WheelSource", "build_changeset", "changed_symbols", "describe_source",
    "diff_sources", "open_source",
]
