"""Which public numpy callables the opset covers: ``python tests/ops/opset_inventory.py``.

Walks every public callable of ``numpy``, ``numpy.linalg`` and ``numpy.fft`` and every public
``ndarray`` method/attribute, and sorts each into

- covered: an op in the registry (a shape rule; composites carry their decomposition), or one of
  capture's own answers (``np.shape``/``np.ndim``/``np.size``..., ``x.shape``, ``x.T``, ``x.astype``);
- refused: a documented refusal (``ops.registry.refusal``: the UnsupportedOpError says why and
  what to write instead; ``numpy.random`` is refused by capture as a whole);
- missing: neither; :data:`MISSING` gives each a reason (not an array op, data-dependent, or
  no rule yet).  ``tests/ops/test_opset_inventory.py`` keeps :data:`MISSING` exact.

Prints one line per missing callable (``--all`` also the covered and refused ones).
"""
from __future__ import annotations

import argparse
import inspect
import types

import numpy as np

_NOT_AN_OP = "not an array op (configuration, printing, I/O, dtype or type queries)"
_DATA = "the result's size or type depends on the values (data-dependent)"
_OBJECT = "a memory-level attribute of one concrete array (no meaning for a program's symbolic array)"

MISSING: dict[str, str] = {
    **{f"numpy.{n}": _NOT_AN_OP for n in (
        "array2string", "array_repr", "array_str", "base_repr", "binary_repr", "busday_count", "busday_offset",
        "can_cast", "common_type", "datetime_as_string", "datetime_data", "format_float_positional",
        "format_float_scientific", "from_dlpack", "frombuffer", "fromfile", "fromregex", "fromstring", "genfromtxt",
        "get_include", "get_printoptions", "getbufsize", "geterr", "geterrcall", "info", "is_busday", "isdtype",
        "isfortran", "isscalar", "issubdtype", "iterable", "load", "loadtxt", "may_share_memory", "min_scalar_type",
        "mintypecode", "printoptions", "promote_types", "save", "savetxt", "savez", "savez_compressed",
        "set_printoptions", "setbufsize", "seterr", "seterrcall", "shares_memory", "show_config", "show_runtime",
        "test", "typename", "einsum_path", "asmatrix", "bmat", "require")},
    "numpy.broadcast_shapes": "takes shapes, not arrays: it runs as Python on the symbolic sizes (no op needed)",
    **{f"numpy.{n}": "capture answers it for a traced array (the array itself, a numpy.copy or an astype node)"
       for n in ("array", "asarray", "asanyarray")},
    "numpy.mask_indices": "takes a Python function building the mask",
    "numpy.poly": "takes roots or a matrix and calls eigvals on the matrix form (value-dependent dtype)",
    "numpy.row_stack": "removed alias of np.vstack (deprecated in numpy 2.0)",
    "numpy.linalg.test": _NOT_AN_OP, "numpy.fft.test": _NOT_AN_OP,
    **{f"ndarray.{n}": _OBJECT for n in ("base", "ctypes", "data", "flags", "strides", "setflags")},
    **{f"ndarray.{n}": _NOT_AN_OP for n in ("dump", "dumps", "tobytes", "tofile")},
    **{f"ndarray.{n}": "reinterprets the bytes of one concrete array (a byte-level view): use astype"
       for n in ("byteswap", "getfield", "setfield")},
}


def public(module: types.ModuleType) -> list[tuple[str, object]]:
    """Public callables of ``module`` that are functions or ufuncs (not classes, not submodules)."""
    out = []
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        value = getattr(module, name)
        if isinstance(value, types.ModuleType) or inspect.isclass(value) or not callable(value):
            continue
        out.append((name, value))
    return out


def inventory() -> dict[str, dict[str, str]]:
    """``{"covered": {name: op}, "refused": {name: why}, "missing": {name: reason or ""}}``."""
    import tensorplay_export.capture.entry  # noqa: F401  (registers nn's composites, as a capture does)
    from tensorplay_export.capture import traced
    from tensorplay_export.ops.registry import lookup_func, lookup_method, refusal

    covered: dict[str, str] = {}
    refused: dict[str, str] = {}
    missing: dict[str, str] = {}
    for prefix, module in (("numpy", np), ("numpy.linalg", np.linalg), ("numpy.fft", np.fft)):
        for name, func in public(module):
            key = f"{prefix}.{name}"
            op = lookup_func(func)
            if op is not None:
                covered[key] = op.name
            elif func in traced._METADATA:
                covered[key] = "capture (a metadata answer)"
            elif refusal(func) is not None:
                refused[key] = refusal(func)
            else:
                missing[key] = MISSING.get(key, "")
    own = {n for cls in traced.TracedArray.__mro__[:-1] for n in vars(cls)}
    for name in sorted(n for n in dir(np.ndarray) if not n.startswith("_")):
        key = f"ndarray.{name}"
        op = lookup_method(name)
        if op is not None:
            covered[key] = op.name
        elif name in own:
            covered[key] = "capture (TracedArray)"
        elif refusal(getattr(np.ndarray, name)) is not None:
            refused[key] = refusal(getattr(np.ndarray, name))
        else:
            missing[key] = MISSING.get(key, "")
    return {"covered": covered, "refused": refused, "missing": missing}


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--all", action="store_true", help="also list the covered and refused callables")
    args = parser.parse_args(argv)
    inv = inventory()
    print(f"covered {len(inv['covered'])}, refused {len(inv['refused'])}, missing {len(inv['missing'])}")
    sections = ("covered", "refused", "missing") if args.all else ("missing",)
    for section in sections:
        print(f"\n{section}:")
        for name, why in sorted(inv[section].items()):
            print(f"  {name}: {why or '(no reason recorded)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
