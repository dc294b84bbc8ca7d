"""Suggested fixes on a zoo of realistic architectures: refine rounds, contract vs widest, time.

Run:  python benchmarks/bench_diagnostics.py [--models NAME,NAME] [--rounds 5] [--quick]

Each model of ``benchmarks/zoo.py`` is exported from its naive spec (every axis that varies
in practice a named ``Dim`` with a max, nothing else). On ``ConstraintViolationError`` the
loop applies ``refine_dynamic_shapes_from_suggested_fixes(str(err), spec)`` and exports
again, at most ``--rounds`` times. Per model:

- rounds: refine steps before the export that succeeded (0: the naive spec exports; the
  goal is at most 1 everywhere);
- contract == admits: the final program, called through ``ep.module()`` at every grid size,
  runs and matches eager numpy exactly where the model's hand-written ``admits`` says so,
  and raises ``ConstraintsExceededError`` everywhere else ("n/a": no program);
- first error s: seconds from the start of the loop to the first export error (the first
  diagnostic a user reads); success s: seconds to the export that succeeded (all rounds);
- notes: "N rounds", "no fix" (refine found no ``Suggested fixes:`` block), "cap" (still
  failing after ``--rounds``), "narrower: refuses ...", "wider: admits ...", "wrong: ...",
  and "admits disagrees with eager" if the hand-written contract itself failed its check.

Before the table one untimed export of a trivial function pays the imports and z3 start-up;
each model then runs once (one loop, one process), so the seconds are single cold-ish runs.
``--quick`` runs two small models (for the smoke test).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common as C  # noqa: E402
from benchmarks import zoo as Z  # noqa: E402

HEADERS = ["model", "rounds", "contract == admits", "first error s", "success s", "notes"]
QUICK = ["moe_routing", "gqa_rope"]


def _warm_up() -> None:
    import numpy as np

    import tensorplay_export as tpe

    tpe.export(lambda x: x[:, :2] + 1, np.zeros((2, 4), np.float32),
               dynamic_shapes=({0: tpe.Dim("warm_b", max=8)},))


def measure(zm: Z.ZooModel, max_rounds: int) -> dict:
    """One refine loop, the contract check and the admits self-check of one zoo model."""
    admits = Z.check_admits(zm)
    res = Z.refine_loop(zm, max_rounds=max_rounds)
    notes: list[str] = []
    equal: Optional[str] = "n/a"
    if res.outcome == "ok":
        if res.rounds > 1:
            notes.append(f"{res.rounds} rounds")
        contract = Z.check_contract(zm, res.ep)
        problems = Z.contract_notes(contract)
        equal = "no" if problems else "yes"
        notes += problems
    else:
        notes.append(res.outcome if res.outcome != "cap" else f"cap: still failing after {res.rounds} rounds")
    if admits["bad"]:
        notes.append(f"admits disagrees with eager: {admits['bad'][0]}")
    return {"model": zm.name, "rounds": res.rounds if res.outcome == "ok" else None, "equal": equal,
            "first": res.first_error_s, "success": res.success_s, "notes": "; ".join(notes),
            "errors": res.errors}


def rows_for(results: list[dict]) -> list[list[Any]]:
    return [[r["model"], r["rounds"], r["equal"], r["first"], r["success"], r["notes"] or "-"] for r in results]


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="", help="comma-separated zoo names (default: all)")
    parser.add_argument("--rounds", type=int, default=5, help="refine rounds before giving up (default 5)")
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    parser.add_argument("--errors", action="store_true", help="print each model's error texts after the table")
    args = parser.parse_args(argv)
    wanted = QUICK if args.quick else [n for n in args.models.split(",") if n.strip()]
    models = [zm for zm in Z.zoo() if not wanted or zm.name in wanted]
    unknown = set(wanted) - {zm.name for zm in models}
    if unknown:
        parser.error(f"unknown zoo models: {', '.join(sorted(unknown))}")

    C.print_header("suggested fixes: refine rounds to a widest contract", "bench_diagnostics", argv)
    _warm_up()
    results = [measure(zm, args.rounds) for zm in models]
    print(C.table(HEADERS, rows_for(results)))
    ok = sum(1 for r in results if r["rounds"] is not None and r["rounds"] <= 1 and r["equal"] == "yes")
    print(f"{ok}/{len(results)} models reach the widest contract in at most one refine round.")
    if args.errors:
        for r in results:
            for text in r["errors"]:
                print(f"\n### {r['model']}\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
