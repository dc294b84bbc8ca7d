"""Run as a script: export every acceptance case (plus one module) and print, as JSON, the
program code, the violation text, the fix lines and the archive's SHA-256 of each.

Used by test_determinism.py under different PYTHONHASHSEED values.
"""
from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: _shared
# the project root too: tests/solver/ would otherwise stand in for the solver package (a namespace package)
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tensorplay_export as tpe  # noqa: E402

from _rel_util import case_files, load_case  # noqa: E402


def fix_lines(text: str) -> list[str]:
    lines = text.splitlines()
    if "Suggested fixes:" not in lines and "Suggested fixes:" not in text:
        return []
    start = next(i for i, line in enumerate(lines) if line.strip() == "Suggested fixes:")
    return [line.strip() for line in lines[start + 1:] if line.strip()]


def archive_digest(ep) -> str:
    buf = io.BytesIO()
    tpe.save(ep, buf)
    return hashlib.sha256(buf.getvalue()).hexdigest()


_INPUTS: dict = {}


def probe(path: Path) -> dict:
    case = load_case(path)
    if path not in _INPUTS:  # the cases draw from one shared rng: same export = same example values
        _INPUTS[path] = case.make_inputs(**case.EXAMPLE)
    args, kwargs = _INPUTS[path]
    spec = case.dynamic_shapes()
    out: dict = {}
    try:
        ep = tpe.export(case.model, *args, dynamic_shapes=spec, **kwargs)
    except tpe.ConstraintViolationError as err:
        out["error"] = str(err)
        out["fixes"] = fix_lines(str(err))
        try:
            ep = tpe.export(case.model, *args,
                            dynamic_shapes=tpe.refine_dynamic_shapes_from_suggested_fixes(str(err), spec), **kwargs)
        except (tpe.ConstraintViolationError, ValueError) as again:  # a case one refine step does not close yet
            out["refined_error"] = str(again)
            return out
    except Exception as err:  # noqa: BLE001 - data-dependent: the message must be stable too
        out["error"] = f"{type(err).__name__}: {err}"
        return out
    out["code"] = ep.code
    out["ranges"] = sorted(f"{k}: {v}" for k, v in ep.range_constraints.items())
    out["archive"] = archive_digest(ep)
    return out


def main() -> None:
    files = [Path(p) for p in sys.argv[1:]] or case_files()
    print(json.dumps({p.stem: probe(p) for p in files}, sort_keys=True))


if __name__ == "__main__":
    main()
