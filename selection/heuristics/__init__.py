"""The registered heuristics, in a plain list (order only matters for reason order)."""

from selection.heuristics.canary import MachineryCanary
from selection.heuristics.changed_definition import ChangedDefinition
from selection.heuristics.edited_op import EditedOp
from selection.heuristics.interface import Heuristic, HeuristicResult
from selection.heuristics.unsupported_op import UnsupportedOp

HEURISTICS: list[Heuristic] = [ChangedDefinition(), EditedOp(), MachineryCanary(), UnsupportedOp()]

__all__ = ["HEURISTICS", "Heuristic", "HeuristicResult", "ChangedDefinition", "EditedOp", "MachineryCanary",
           "UnsupportedOp"]
