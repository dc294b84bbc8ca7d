"""Rendering of a :class:`~tensorplay_export.face.draft.DraftExportReport`: plain text, HTML, markdown, JSON-able dict.

All four show the same content: a status line (program built? structural
validation, max abs/rel difference against eager), the failures grouped by
kind (message, the model's ``file:line`` and source text, the fix lines
concerning it; none for a guard no fix line expresses), the guards accepted on
``Dim.AUTO`` and ``Dim.DYNAMIC`` sizes, and, last, one ``Suggested fixes:`` block that
``refine_dynamic_shapes_from_suggested_fixes`` reads (it stops at the first
blank line, so nothing follows the block).  When other failures make export fail
whatever the fixes (``report.fixes_blocked_by``), a sentence before the block
says so plainly.  A report with violations but no
fix line ends with ``errors.NO_FIXES_LINE`` instead, so refine says there
is nothing to apply and quotes what each bullet says to do.

Everything shown comes from the report's records (:mod:`.failures`); no message
text is read back.
"""
from __future__ import annotations

import html
import math
from typing import Any, Optional

from ..errors import FIXES_HEADER, NO_FIXES_LINE
from .failures import KINDS, FailureReport
from .region import report_region

__all__ = ["render_text", "render_html", "render_markdown", "report_to_dict", "status_line", "shown_fix",
           "fixes_blocked_line"]


def _num(x: float) -> str:
    return "inf" if x == math.inf else f"{x:.3g}"


def status_line(report: Any) -> str:
    """``f: 2 failures; program built (validation ok; max abs diff 0, max rel diff 0 vs eager)``."""
    n = len(report.failures)
    head = f"draft_export of {report.model_name}: " + ("no failures" if n == 0 else
                                                      f"{n} failure{'s' if n != 1 else ''}")
    if report.exported_program is None:
        return head + "; no program could be built"
    parts = []
    if report.validation is not None:
        parts.append("validation ok" if report.validation.ok else "validation FAILED")
    c = report.comparison
    if c is not None:
        scope = f" over finite positions ({c.nonfinite} inf/nan)" if getattr(c, "nonfinite", 0) else ""
        parts.append(f"max abs diff {_num(c.max_abs)}, max rel diff {_num(c.max_rel)}{scope} vs eager"
                     + ("" if c.ok else " (MISMATCH)"))
    return head + f"; program built ({'; '.join(parts)})"


def _where(f: Any) -> str:
    return str(f.source) if f.source is not None else ""


def shown_fix(f: FailureReport) -> Optional[str]:
    """The fix lines to show next to one failure, or None.

    A violation no fix line expresses (its record's ``unfixable`` says why) shows
    none, even when a fix line for another guard names the same dims (that line
    does not fix this guard).
    """
    if f.violation is not None and f.violation.unfixable is not None:
        return None
    return f.fix


def _repeated(f: FailureReport) -> str:
    """``(2 times at this line, e.g. once per loop iteration; reported once)``."""
    return f"({f.count} times at this line, e.g. once per loop iteration; reported once)"


def _no_fixes_line(report: Any) -> Any:
    """The closing line of a report with violations but no fix line (refine quotes it), else None."""
    if report.fixes or not any(f.kind == "constraint_violation" for f in report.failures):
        return None
    return NO_FIXES_LINE


def fixes_blocked_line(report: Any) -> Optional[str]:
    """The sentence saying the fixes do not make export succeed (``report.fixes_blocked_by``), or None."""
    blocked = getattr(report, "fixes_blocked_by", None)
    if not blocked:
        return None
    kinds = ", ".join(KINDS.get(k, k) for k in blocked)
    return (f"These fixes do not make export succeed: export() would still fail because of the other "
            f"failures above ({kinds}), which no dynamic_shapes change fixes. Fix those in the model as well.")


def _before_fixes_lines(report: Any) -> list[str]:
    """What the report says right before its fix block: the blocked sentence and the proof's note."""
    out = [fixes_blocked_line(report)] if fixes_blocked_line(report) else []
    note = getattr(report, "fixes_note", None)
    if note:
        out.append(f"Note: {note}")
    return out


def render_text(report: Any) -> str:
    """The plain-text report (``str(report)``)."""
    out = [status_line(report)]
    for kind, items in report.by_kind().items():
        out.append("")
        out.append(f"{KINDS.get(kind, kind)} ({len(items)})")
        for i, f in enumerate(items, 1):
            lines = f.message.splitlines() or [f.kind]
            out.append(f"  {i}. {lines[0]}")
            out += [f"     {ln}" for ln in lines[1:]]
            if f.source is not None:
                out.append(f"     at {_where(f)}")
            if f.count > 1:
                out.append(f"     {_repeated(f)}")
            fix = shown_fix(f)
            if fix:
                out.append(f"     fix: {'; '.join(fix.splitlines())}")
    if report.accepted:
        out.append("")
        out.append("Guards accepted on Dim.AUTO and Dim.DYNAMIC sizes (part of the program's contract)")
        out += [f"  - {g}" for g in report.accepted]
    if report.fixes:
        out.append("")
        out += _before_fixes_lines(report)
        out.append(FIXES_HEADER)
        out += [f"  {ln}" for ln in report.fixes]
    elif _no_fixes_line(report):
        out += ["", _no_fixes_line(report)]
    return "\n".join(out)


def report_to_dict(report: Any) -> dict:
    """JSON-able form (``--json`` of the CLI)."""
    v, c = report.validation, report.comparison

    def num(x: float) -> Any:
        return None if x == math.inf else x

    return {
        "model": report.model_name,
        "successful": report.successful(),
        "program_built": report.exported_program is not None,
        "validation": None if v is None else {"ok": v.ok, "problems": list(v.problems)},
        "comparison": None if c is None else {"ok": c.ok, "max_abs": num(c.max_abs), "max_rel": num(c.max_rel),
                                              "nonfinite": getattr(c, "nonfinite", 0), "note": c.note},
        "failures": [dict(f.to_dict(), fix=shown_fix(f)) for f in report.failures],
        "accepted_auto_guards": list(report.accepted),
        "suggested_fixes": list(report.fixes),
        "fixes_blocked_by": list(getattr(report, "fixes_blocked_by", [])),
        "fixes_note": getattr(report, "fixes_note", None),
    }


def _message(f: FailureReport) -> str:
    """The message, and how often it was asked when more than once."""
    return f"{f.message}\n{_repeated(f)}" if f.count > 1 else f.message


def _loc(f: Any) -> tuple[str, str]:
    if f.source is None:
        return "", ""
    return f.source.where, f.source.text


def render_html(report: Any) -> str:
    """An HTML table (Jupyter ``_repr_html_``)."""
    esc = html.escape
    rows = []
    for i, f in enumerate(report.failures, 1):
        where, text = _loc(f)
        src = f"<code>{esc(where)}</code><br><code>{esc(text)}</code>" if where else ""
        fix = shown_fix(f)
        fix = f"<pre style='margin:0'>{esc(fix)}</pre>" if fix else ""
        rows.append(f"<tr><td>{i}</td><td>{esc(KINDS.get(f.kind, f.kind))}</td>"
                    f"<td style='text-align:left'><pre style='margin:0;white-space:pre-wrap'>{esc(_message(f))}</pre>"
                    f"</td><td style='text-align:left'>{src}</td><td style='text-align:left'>{fix}</td></tr>")
    parts = [f"<div class='tpe-draft-report'><p><b>{esc(status_line(report))}</b></p>"]
    if rows:
        parts.append("<table><thead><tr><th>#</th><th>kind</th><th>message</th><th>source</th><th>fix</th>"
                     "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
    if report.accepted:
        parts.append("<p>Guards accepted on Dim.AUTO and Dim.DYNAMIC sizes:</p><ul>"
                     + "".join(f"<li><code>{esc(g)}</code></li>" for g in report.accepted) + "</ul>")
    if report.fixes:
        parts += [f"<p><b>{esc(line)}</b></p>" for line in _before_fixes_lines(report)]
        parts.append(f"<p>{esc(FIXES_HEADER)}</p><pre>" + esc("\n".join(report.fixes)) + "</pre>")
    elif _no_fixes_line(report):
        parts.append(f"<p>{esc(_no_fixes_line(report))}</p>")
    region = report_region(report.exported_program) if report.exported_program is not None else None
    if region is not None:
        parts.append("<p>Sizes the program admits (its own input checks, asked on a grid):</p>"
                     + region._repr_html_())
    parts.append("</div>")
    return "".join(parts)


def _md_cell(text: str) -> str:
    return html.escape(text).replace("|", "\\|").replace("\n", "<br>")


def render_markdown(report: Any) -> str:
    """A markdown table (Jupyter ``_repr_markdown_``)."""
    out = [f"**{status_line(report)}**", ""]
    if report.failures:
        out.append("| # | kind | message | source | fix |")
        out.append("|---|---|---|---|---|")
        for i, f in enumerate(report.failures, 1):
            where, text = _loc(f)
            src = f"`{where}` `{text.replace('`', '')}`".replace("|", "\\|") if where else ""
            fix = "<br>".join(f"`{ln}`" for ln in (shown_fix(f) or "").splitlines())
            out.append(f"| {i} | {_md_cell(KINDS.get(f.kind, f.kind))} | {_md_cell(_message(f))} | "
                       f"{src} | {fix} |")
        out.append("")
    if report.accepted:
        out.append("Guards accepted on Dim.AUTO and Dim.DYNAMIC sizes:")
        out += [f"- `{g}`" for g in report.accepted]
        out.append("")
    if report.fixes:
        for line in _before_fixes_lines(report):
            out += [f"**{line}**", ""]
        out += [FIXES_HEADER, "```", *report.fixes, "```"]
    elif _no_fixes_line(report):
        out.append(_no_fixes_line(report))
    return "\n".join(out)
