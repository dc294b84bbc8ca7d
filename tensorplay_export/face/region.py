"""A picture of a program's admitted sizes over two dims (issue 18, item 9).

:func:`admitted_region` asks the program's own input checks
(:class:`~tensorplay_export.program.input_checks.SizeProbe`) about every pair of
sizes on a grid and classifies each cell:

- ``"admitted"``: the checks accept the call;
- ``"range"``: refused, and a size lies outside its dim's range;
- ``"relation"``: refused inside the ranges (divisibility, a relation between
  dims, a guard draft_export checks at run time).

The :class:`AdmittedRegion` renders as text (always), as an HTML grid
(Jupyter, and the draft_export HTML report) and with matplotlib when it is
installed (``region.plot()``; an optional extra: ``pip install matplotlib``).
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from ..program.input_checks import SizeProbe, one_root

__all__ = ["AdmittedRegion", "admitted_region", "report_region"]

_GLYPHS = {"admitted": "#", "range": ".", "relation": "x"}
_COLORS = {"admitted": "#3a7d44", "range": "#d9d9d9", "relation": "#e07a5f"}
_LABELS = {"admitted": "admitted", "range": "refused by range",
           "relation": "refused inside the ranges (divisibility, relation, guard)"}
MAX_SIDE = 48  # sizes per axis: a picture, not a sweep


@dataclass(frozen=True)
class AdmittedRegion:
    """Which ``(x, y)`` sizes the program admits.

    Attributes:
        x_dim, y_dim: the dims: size symbols (as ``range_constraints`` names them) or
            input axes (``"x.shape[1]"``).
        xs, ys: the sizes tried per axis, increasing.
        cells: ``cells[j][i]`` is the class of ``(xs[i], ys[j])``: ``"admitted"``,
            ``"range"`` or ``"relation"``.
    """

    x_dim: str
    y_dim: str
    xs: tuple[int, ...]
    ys: tuple[int, ...]
    cells: tuple[tuple[str, ...], ...]

    def at(self, x: int, y: int) -> str:
        """The class of the sizes ``(x, y)`` (both must be on the grid)."""
        return self.cells[self.ys.index(y)][self.xs.index(x)]

    def text(self) -> str:
        """The grid as text, ``y`` growing downwards: ``#`` admitted, ``.`` range, ``x`` relation."""
        width = max(len(str(y)) for y in self.ys)
        lines = [f"rows {self.y_dim}: {_axis_text(self.ys)}; columns {self.x_dim}: {_axis_text(self.xs)}"]
        for y, row in zip(self.ys, self.cells):
            lines.append(f"{str(y).rjust(width)} " + "".join(_GLYPHS[c] for c in row))
        lines.append("  ".join(f"{g} {_LABELS[k]}" for k, g in _GLYPHS.items()))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        esc = html.escape
        head = "".join(f"<th style='font-size:8px;padding:0'>{x if i % _tick(self.xs) == 0 else ''}</th>"
                       for i, x in enumerate(self.xs))
        rows = []
        for y, row in zip(self.ys, self.cells):
            # one small cell per size pair (no per-cell tooltip: 24x24 cells stay ~25 kB)
            cells = "".join(f"<td style='background:{_COLORS[c]};width:9px;height:9px;padding:0'></td>"
                            for c in row)
            rows.append(f"<tr><th style='font-size:8px;padding:0 2px'>{y}</th>{cells}</tr>")
        legend = " ".join(f"<span style='background:{_COLORS[k]}'>&nbsp;&nbsp;</span> {_LABELS[k]}"
                          for k in _COLORS)
        return (f"<div class='tpe-region'><p>{esc(self.y_dim)} (rows) by {esc(self.x_dim)} (columns)</p>"
                f"<table style='border-collapse:collapse'><tr><th></th>{head}</tr>{''.join(rows)}</table>"
                f"<p style='font-size:smaller'>{legend}</p></div>")

    def plot(self, ax: Any = None) -> Any:
        """Draw the grid with matplotlib (an optional extra) and return the axes.

        Raises:
            ImportError: matplotlib is not installed (``pip install matplotlib``;
                ``region.text()`` needs nothing).
        """
        try:
            import matplotlib.pyplot as plt
            from matplotlib.colors import ListedColormap
        except ImportError as err:
            raise ImportError("AdmittedRegion.plot needs matplotlib (pip install matplotlib); "
                              "region.text() draws the same grid as text") from err
        order = list(_COLORS)
        data = [[order.index(c) for c in row] for row in self.cells]
        if ax is None:
            _, ax = plt.subplots(figsize=(4, 4))
        ax.imshow(data, cmap=ListedColormap([_COLORS[k] for k in order]), vmin=0, vmax=len(order) - 1,
                  origin="lower", aspect="auto",
                  extent=(self.xs[0] - 0.5, self.xs[-1] + 0.5, self.ys[0] - 0.5, self.ys[-1] + 0.5))
        ax.set_xlabel(self.x_dim)
        ax.set_ylabel(self.y_dim)
        return ax


def _axis_text(values: Sequence[int]) -> str:
    consecutive = all(b - a == 1 for a, b in zip(values, values[1:]))
    return f"{values[0]}..{values[-1]}" + ("" if consecutive else f" ({len(values)} of them)")


def report_region(program: Any, side: int = 24) -> Optional[AdmittedRegion]:
    """The region over the program's first two dims (in input order), or None with fewer than two.

    What the draft_export HTML report shows.
    """
    try:
        probe = SizeProbe(program)
    except ValueError:
        return None
    names = [str(s) for s in probe.hints] + [n for n in sorted(probe.symbols) if probe.symbols[n] not in probe.hints]
    if len(names) < 2:
        return None
    return admitted_region(program, names[0], names[1], side=side)


def _tick(values: Sequence[int]) -> int:
    return max(1, math.ceil(len(values) / 8))


def _span(probe: SizeProbe, name: str) -> tuple[int, int, int]:
    """``(lowest, highest, example)`` size a dim or input axis can take under its range."""
    if name in probe.symbols:
        sym = probe.symbols[name]
        vr = probe.ranges[sym]
        return int(vr.lower), vr.upper, probe.hints.get(sym, int(vr.lower))
    _node, _axis, expr = probe.sites[name]
    root = one_root(expr)
    if root is None:
        raise ValueError(f"{name} = {expr} is a size over several dims; pick its dims instead")
    r, k, c = root
    vr = probe.ranges[r]
    ends = [k * vr.lower + c, k * vr.upper + c if vr.upper != math.inf else math.inf]
    hint = k * probe.hints.get(r, int(vr.lower)) + c
    return int(min(ends)), max(ends), int(hint)


def _in_range(probe: SizeProbe, name: str, size: int) -> bool:
    if name in probe.symbols:
        return size in probe.ranges[probe.symbols[name]]
    lo, hi, _ = _span(probe, name)
    return lo <= size <= hi


def _sizes(probe: SizeProbe, name: str, given: Optional[Sequence[int]], side: int) -> tuple[int, ...]:
    if given is not None:
        sizes = tuple(sorted({int(v) for v in given}))
        if not sizes:
            raise ValueError(f"no sizes given for {name}")
        return sizes
    low, high, hint = _span(probe, name)
    lo = max(0, low - 2)
    hi = int(high) + 2 if high != math.inf else max(2 * hint, hint + 8)
    if hi - lo + 1 <= side:
        return tuple(range(lo, hi + 1))
    step = (hi - lo) / (side - 1)
    return tuple(sorted({lo + round(i * step) for i in range(side)}))


def admitted_region(program: Any, x_dim: str, y_dim: str, xs: Optional[Sequence[int]] = None,
                    ys: Optional[Sequence[int]] = None, *, fixed: Optional[dict] = None,
                    side: int = 32) -> AdmittedRegion:
    """Classify every ``(x, y)`` size pair by what the program's input checks decide.

    Args:
        program: an ExportedProgram (from ``export`` or ``draft_export``).
        x_dim, y_dim: two size symbols of ``program.range_constraints`` (``"seq"``)
            or input axes (``"x.shape[1]"``: an axis ``4*_h`` then shows its
            divisibility).
        xs, ys: sizes to try; default: the dim's range with two sizes either side
            (an unbounded range: up to twice the example size), at most ``side``
            sizes (consecutive when the span allows, so divisibility shows).
        fixed: other symbols' sizes (default: the example's, else the range's lower bound).
        side: sizes per axis when ``xs``/``ys`` are not given (at most 48).

    Returns:
        :class:`AdmittedRegion`.

    Raises:
        KeyError: a dim is not a size symbol of the program (the message lists them).
        ValueError: the program has no input checks.
    """
    probe = SizeProbe(program)
    for name in (x_dim, y_dim):
        if name not in probe.symbols and name not in probe.sites:
            raise KeyError(f"no size symbol or input axis {name!r} in the program; symbols: "
                           f"{sorted(probe.symbols)}, axes: {sorted(probe.sites)}")
    side = max(2, min(int(side), MAX_SIDE))
    xs_t, ys_t = _sizes(probe, x_dim, xs, side), _sizes(probe, y_dim, ys, side)
    base = dict(fixed or {})
    rows = []
    for y in ys_t:
        row = []
        for x in xs_t:
            refused = probe({**base, x_dim: x, y_dim: y})
            if refused is None:
                row.append("admitted")
            else:
                in_ranges = _in_range(probe, x_dim, x) and _in_range(probe, y_dim, y)
                row.append("relation" if in_ranges else "range")
        rows.append(tuple(row))
    return AdmittedRegion(x_dim, y_dim, xs_t, ys_t, tuple(rows))
