"""Test helpers: snapshot a program's shape contract and fail when it changes.

Usage under pytest::

    def test_encoder_contract():
        ep = export(model, x, dynamic_shapes={"x": {1: Dim("seq", max=512)}})
        assert_contract(ep, Path(__file__).parent / "snapshots" / "encoder.contract.json")

The first run writes the snapshot (commit it).  Later runs compare the
program's contract with it (by input sites, decided by the solver: renamed dims
are no change) and raise ``AssertionError`` with a readable diff
(the solver's verdict on whether the new contract admits fewer sizes, each
change, and a line diff of the two descriptions).  Set the environment
variable ``TENSORPLAY_UPDATE_SNAPSHOTS=1`` (or pass ``update=True``) to
rewrite snapshots after an intended change.
"""
from __future__ import annotations

import difflib
import json
import os
from typing import Any

__all__ = ["assert_contract", "UPDATE_ENV"]

UPDATE_ENV = "TENSORPLAY_UPDATE_SNAPSHOTS"


def _contract(ep_or_target: Any) -> Any:
    from .contract import Contract, contract_of

    if isinstance(ep_or_target, Contract):
        return ep_or_target
    if isinstance(ep_or_target, (str, os.PathLike)):
        text = os.fspath(ep_or_target)
        if ":" in os.path.basename(text) and not os.path.isfile(text):
            from .cli import load_target
            from ..export import export

            model, args, kwargs, spec = load_target(text)
            return contract_of(export(model, *args, dynamic_shapes=spec, **kwargs))
        from .contract import load_contract

        return load_contract(text)
    program = getattr(ep_or_target, "exported_program", None)  # a DraftExportReport
    if program is not None:
        ep_or_target = program
    if hasattr(ep_or_target, "graph_signature"):
        return contract_of(ep_or_target)
    raise TypeError(f"assert_contract takes an ExportedProgram, a DraftExportReport with a program, a Contract, "
                    f"an archive path or a 'file.py:function' target; got {type(ep_or_target).__name__}")


def _dump(data: dict) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def assert_contract(ep_or_target: Any, snapshot_path: Any, *, update: bool = False) -> None:
    """Compare a program's shape contract with a JSON snapshot (written on the first run).

    Args:
        ep_or_target: ``ExportedProgram``, ``DraftExportReport``, ``Contract``, archive
            path, or ``"path/to/file.py:function"`` (exported here).
        snapshot_path: the JSON file (parent folders are created).
        update: rewrite the snapshot instead of comparing (also ``TENSORPLAY_UPDATE_SNAPSHOTS=1``).

    Raises:
        AssertionError: the contract differs from the snapshot (message: verdict, changes, line diff).
    """
    from .contract import Contract, diff_contracts, outputs_by_sites

    current = _contract(ep_or_target)
    path = os.fspath(snapshot_path)
    text = _dump(current.to_json())
    if update or os.environ.get(UPDATE_ENV) == "1" or not os.path.exists(path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    with open(path, encoding="utf-8") as fh:
        stored_text = fh.read()
    stored = Contract.from_json(json.loads(stored_text), os.path.basename(path))
    if _dump(json.loads(stored_text)) == text:
        return
    diff = diff_contracts(stored, current)
    same_outputs = outputs_by_sites(stored) == outputs_by_sites(current)
    if diff.narrowed is False and not diff.changes and same_outputs:
        return  # the solver proved both admit the same sizes (dims renamed, a bound written as a range)
    lines = difflib.unified_diff(stored.describe().splitlines(), current.describe().splitlines(),
                                 "snapshot", "current", lineterm="")
    raise AssertionError(
        f"shape contract changed (snapshot {path}):\n{diff}\n\n" + "\n".join(lines)
        + f"\n\nIf the change is intended, rerun with {UPDATE_ENV}=1 to rewrite the snapshot.")
