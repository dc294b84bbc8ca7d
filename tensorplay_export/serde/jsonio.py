"""Strict, deterministic JSON for archives: one way to write, a paranoid way to read.

Writing: UTF-8, ``sort_keys=True``, separators ``(",", ":")``, ASCII-escaped, no
NaN/Infinity literals (floats are stored as hex strings by the value codec, so a
non-finite float reaching ``json`` is a bug).  The same object always gives the
same bytes.

Reading: the byte size is checked before decoding, the text must be UTF-8,
``NaN``/``Infinity`` literals and duplicate object keys are refused, and nesting
deeper than :data:`MAX_JSON_DEPTH` is refused (checked without recursion, so a
hostile document cannot exhaust the interpreter stack).  Every failure is an
:class:`~tensorplay_export.errors.ArchiveError` naming the member.

Both ways, no string holds a control character other than tab, newline and U+001F (the
stand-in for a stored source line's ``:``, serde/values.py): archive text (check labels,
names, source lines) is printed by errors and by the CLI, and an ESC or CSI sequence in
it retitles, clears or hides the user's terminal (ECMA-48).
"""
from __future__ import annotations

import gc
import itertools
import json
import re
from typing import Any, NoReturn

from ..errors import ArchiveError

MAX_JSON_BYTES = 64 * 1024 * 1024  # one program document, bytes (GPT-24: 259 KB)
MAX_JSON_DEPTH = 200  # nesting of arrays/objects; the codecs recurse once per level


def fail(member: str, problem: str) -> NoReturn:
    """Raise the one error kind of this package: ``archive member '<member>': <problem>``.

    A member name is the archive's text (refused names too): its control characters, tab and
    newline are written as escapes, so the message prints as one line of plain text."""
    if not member.isprintable():
        member = "".join(c if c.isprintable() else repr(c)[1:-1] for c in member)
    raise ArchiveError(f"archive member '{member}': {problem}")


def short_repr(value: Any) -> str:
    """``repr(value)`` cut to 80 characters, for quoting a bad value in a :func:`fail` message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def canonical(obj: Any) -> bytes:
    """Deterministic JSON bytes of ``obj`` (sorted keys, fixed separators, ASCII): equal JSON
    values give equal bytes.  No check of the strings (that is :func:`dumps`)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


def dumps(obj: Any) -> bytes:
    """:func:`canonical` bytes of a member's whole document, its strings checked.

    Raises:
        ArchiveError: a string holds a control character (see the module docstring): no
            reader accepts it.
    """
    data = canonical(obj)
    found = control_character(data)
    if found is not None:
        at, code = found
        raise ArchiveError(
            f"cannot serialize: a string holds the control character U+{code:04X} (near "
            f"{data[max(0, at - 40):at + 8].decode('ascii')!r}); archive text is printed to terminals, so "
            "labels, names and string arguments must not hold control characters: remove it")
    return data


# A JSON escape: ``\uXXXX`` or one character; an escaped backslash is consumed whole, so
# ``\\u001b`` (a backslash, then text) is no escape.
_ESCAPE = re.compile(rb"\\(?:u[0-9a-fA-F]{4}|.)", re.S)
_SHORT_ESCAPES = {b"b": 0x08, b"f": 0x0C, b"n": 0x0A, b"r": 0x0D, b"t": 0x09}
_ALLOWED_CONTROLS = frozenset({0x09, 0x0A, 0x1F})
_RAW_CONTROL = re.compile(rb"\x7f|\xc2[\x80-\x9f]")  # DEL, and C1 controls encoded in UTF-8


def _is_control(code: int) -> bool:
    return (code < 0x20 and code not in _ALLOWED_CONTROLS) or 0x7F <= code <= 0x9F


def control_in_text(text: str) -> int | None:
    """The code point of the first control character of ``text`` (the rule of
    :func:`control_character`, for text stored in other forms: a numpy ``str_`` scalar's bytes)."""
    for ch in text:
        if _is_control(ord(ch)):
            return ord(ch)
    return None


def control_character(data: bytes) -> tuple[int, int] | None:
    """``(byte offset, code point)`` of the first control character that a string of JSON text
    ``data`` holds, escaped or raw (C0 other than tab, newline and U+001F; DEL; C1), else None.
    Raw C0 bytes are no concern here: ``json`` refuses them inside strings."""
    for m in _ESCAPE.finditer(data):
        token = m.group()
        code = int(token[2:], 16) if len(token) == 6 else _SHORT_ESCAPES.get(token[1:2])
        if code is not None and _is_control(code):
            return m.start(), code
    if b"\x7f" in data or b"\xc2" in data:
        m = _RAW_CONTROL.search(data)
        if m is not None:
            return m.start(), ord(m.group().decode("utf-8"))
    return None


def _reject_constant(token: str) -> NoReturn:
    raise ValueError(f"non-finite number literal {token} is not allowed")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):  # rare: find the repeated key for the message
        seen: set = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r} in a JSON object")
            seen.add(key)
    return out


def check_depth(obj: Any, member: str, limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse JSON values nested deeper than ``limit`` (level by level, no recursion).

    Only containers are visited (json gives exactly dict and list), one list of
    them per nesting level.
    """
    level = [obj] if type(obj) in _CONTAINERS else []
    depth = 1
    while level:
        if depth > limit:
            fail(member, f"JSON nesting deeper than {limit} levels")
        below: list = []
        for value in level:
            below += [v for v in (value.values() if type(value) is dict else value) if type(v) in _CONTAINERS]
        level = below
        depth += 1


_CONTAINERS = frozenset({dict, list})


def loads(data: bytes, member: str, *, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """Parse archive JSON strictly.

    Args:
        data: the raw member bytes.
        member: archive member name used in error messages.
        max_bytes: size limit checked before decoding.
    Raises:
        ArchiveError: too large, not UTF-8, not JSON, NaN/Infinity literal,
            duplicate key, nested deeper than ``MAX_JSON_DEPTH``, or a control
            character in a string.
    """
    if len(data) > max_bytes:
        fail(member, f"JSON document of {len(data)} bytes exceeds the limit of {max_bytes} bytes")
    raw = bytes(data)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        fail(member, f"not UTF-8 text ({err.reason} at byte {err.start})")
    found = control_character(raw)
    if found is not None:
        fail(member, f"a string holds the control character U+{found[1]:04X} (byte {found[0]}); archive text is "
                     "printed to terminals, where control characters (ESC sequences) rewrite what is shown, "
                     "and no writer of this format stores one")
    obj = _loads_fast(raw, text)
    if obj is _UNPROVEN:
        obj = _loads_checked(text, member)
    return obj


_UNPROVEN = object()


def _loads_fast(raw: bytes, text: str) -> Any:
    """The parsed document when it provably has no duplicate key and no nesting deeper than
    :data:`MAX_JSON_DEPTH`, else ``_UNPROVEN`` (then :func:`_loads_checked` decides, and words
    any error exactly as it always has).

    Calling a Python hook for every JSON object costs more than parsing (issue 19), so
    ``json`` parses without one and duplicates are found by counting.  Why the count is
    exact: in text ``json`` accepts, a ``:`` outside strings occurs once per object member
    and nowhere else (numbers, literals and whitespace hold none), so the number of such
    colons is the number of key/value pairs parsed; without a hook a repeated key
    overwrites its earlier value, so the dicts built hold fewer keys than that in total
    exactly when some object repeats a key (json never shares one dict between two
    places, so each is counted once).  ``raw.count(b":")`` is at least the structural
    count (strings may hold colons), so equality with the parsed keys proves there is no
    duplicate; otherwise the structural colons are counted exactly (:func:`_member_count`).
    """
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except (RecursionError, ValueError):
        return _UNPROVEN
    keys, depth = _keys_and_depth(obj)
    if depth > MAX_JSON_DEPTH:
        return _UNPROVEN
    if keys != raw.count(b":") and keys != _member_count(raw):
        return _UNPROVEN
    return obj


def _keys_and_depth(obj: Any) -> tuple[int, int]:
    """(keys of all objects together, nesting depth) of a value ``json`` built (dicts and lists).

    Level by level, no recursion; ``gc.get_referents`` lists the items of every list and
    the values of every dict of a level in one call, and the type filters run in C
    (``map``/``filter``/``compress``), so no Python code runs per value.
    """
    level = [obj] if type(obj) in _CONTAINERS else []
    keys = depth = 0
    while level:
        depth += 1
        keys += sum(map(len, filter(_IS_DICT, level)))
        below = gc.get_referents(*level)
        level = list(itertools.compress(below, map(_CONTAINERS.__contains__, map(type, below))))
    return keys, depth


_IS_DICT = dict.__instancecheck__  # json builds exact dicts and lists, nothing derived


def _member_count(raw: bytes) -> int:
    """Colons outside strings in JSON text ``raw`` (valid JSON: ``json`` parsed it).

    Backslashes occur only inside strings, where each starts a two-character escape
    read left to right; dropping ``\\\\`` pairs first (left to right, as the lexer pairs
    a run of backslashes) leaves every remaining backslash as the start of an escape, so
    dropping ``\\"`` then removes exactly the escaped quotes (``\\u0022`` is no quote in
    the text).  Every remaining ``"`` opens or closes a string, so the even pieces of a
    split on ``"`` are the text outside strings.  UTF-8 multi-byte sequences hold no
    ASCII bytes, so bytes and characters agree here.
    """
    return outside_strings(raw).count(b":")


def outside_strings(raw: bytes) -> bytes:
    """The bytes of JSON text ``raw`` outside its strings (the rule :func:`_member_count` states)."""
    body = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(body.split(b'"')[0::2])


def _loads_checked(text: str, member: str) -> Any:
    """The reference parse: a hook refuses duplicate keys as each object closes, then
    :func:`check_depth`.  Every error ``loads`` reports comes from here."""
    try:
        obj = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except RecursionError:
        fail(member, f"JSON nesting deeper than {MAX_JSON_DEPTH} levels")
    except ValueError as err:  # JSONDecodeError, our hooks, and int-digit limits
        fail(member, f"invalid JSON: {err}")
    check_depth(obj, member)
    return obj


def expect(cond: bool, member: str, problem: str) -> None:
    """``fail(member, problem)`` unless ``cond``."""
    if not cond:
        fail(member, problem)


def get_dict(obj: Any, member: str, what: str, keys: set[str], optional: frozenset[str] = frozenset()) -> dict:
    """Check ``obj`` is a JSON object whose key set is ``keys`` (plus any of ``optional``)."""
    if not isinstance(obj, dict):
        fail(member, f"{what} must be a JSON object, got {type(obj).__name__}")
    missing = sorted(keys - obj.keys())
    extra = sorted(obj.keys() - keys - optional)
    if missing:
        fail(member, f"{what} is missing key(s) {missing}")
    if extra:
        fail(member, f"{what} has unknown key(s) {extra}")
    return obj


def get_int(value: Any, member: str, what: str, lo: int | None = None, hi: int | None = None) -> int:
    """Check ``value`` is a JSON integer (not a bool) within ``[lo, hi]``."""
    if type(value) is not int:
        fail(member, f"{what} must be an integer, got {value!r:.80}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        fail(member, f"{what} = {value} is outside [{lo}, {hi}]")
    return value


def get_str(value: Any, member: str, what: str, max_len: int = 4096) -> str:
    """Check ``value`` is a JSON string of at most ``max_len`` characters."""
    if not isinstance(value, str):
        fail(member, f"{what} must be a string, got {value!r:.80}")
    if len(value) > max_len:
        fail(member, f"{what} is longer than {max_len} characters")
    return value


def get_list(value: Any, member: str, what: str) -> list:
    """Check ``value`` is a JSON array."""
    if not isinstance(value, list):
        fail(member, f"{what} must be a JSON array, got {type(value).__name__}")
    return value
