"""solver: decide symbolic size guards (sympy in, verdicts out) with interval
arithmetic and z3, and synthesize verified fixes for violated guards.

Knows nothing of arrays, tracing or programs; imports sympy and z3 only.
"""
from .budget import SolverBudget, active_budget, solver_budget
from .canon import canonicalize
from .decide import PROVED, REFUTED, UNKNOWN, ShapeSolver, Verdict, make_symbol
from .evaluation import UnboundSymbolError, evaluate
from .extent import value_extent
from .fixes import (RELATION_FORMS, SEARCHED_FORMS, ConstantFix, FixSuggestion, GuardCheck, RangeFix, RelationFix, Unfixable,
                    suggest_fixes)
from .intervals import bounds
from .intervals import decide as decide_by_intervals  # `solver.decide` stays the module
from .translate import Translator, UnsupportedExpressionError, to_z3
from .witnesses import witness

__all__ = [
    "ShapeSolver", "Verdict", "suggest_fixes", "FixSuggestion", "canonicalize",
    "UnsupportedExpressionError", "evaluate", "UnboundSymbolError", "make_symbol", "RangeFix", "ConstantFix",
    "RelationFix", "Unfixable", "RELATION_FORMS", "SEARCHED_FORMS", "GuardCheck", "Translator", "to_z3", "bounds",
    "decide_by_intervals", "value_extent", "witness",
    "SolverBudget", "solver_budget", "active_budget",
    "PROVED", "REFUTED", "UNKNOWN",
]
