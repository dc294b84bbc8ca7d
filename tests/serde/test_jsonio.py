"""Strict JSON reading: the fast parse (no hook, keys counted) agrees with the hooked reference parse.

``jsonio.loads`` accepts a document without the per-object duplicate hook only when
it has proved there is no repeated key and no nesting deeper than the limit; these
tests feed it the texts that could fool a counting argument (colons, quotes and
backslashes inside strings, escapes that spell a quote or a key, repeats deep inside
a value) and compare every outcome with the reference parse.
"""
from __future__ import annotations

import json
import random

import pytest

from tensorplay_export.errors import ArchiveError
from tensorplay_export.serde import jsonio


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except ArchiveError as err:
        return ("error", str(err))


def agree(text: bytes) -> tuple:
    """The outcome of ``loads`` on ``text``, checked equal to the reference parse's."""
    fast = outcome(jsonio.loads, text, "m.json")
    ref = outcome(jsonio._loads_checked, text.decode("utf-8"), "m.json")
    assert fast == ref, (text[:200], fast, ref)
    return fast


DUPLICATES = [
    b'{"a":1,"a":2}',
    b'{"a":1,"b":2,"a":3}',
    b'[{"x":{"a":1,"b":{"c":1,"c":2}}}]',          # deep inside a nested value
    b'{"v":[1,2,{"k":"sym","k":"dtype"}]}',
    b'{"a\\\\":1,"a\\\\":2}',                        # key ending in an escaped backslash
    b'{"\\u0061":1,"a":2}',                          # the same key spelled with an escape
    b'{"a\\"":1,"a\\"":2,"q":"\\":"}',               # escaped quotes next to colons
    b'{"\\u0022":1,"\\"":2}',                        # an escaped quote two ways
    b'{"s":"x:y:z","s":"w"}',                        # extra colons in strings mask nothing
    b'{"a":{"b":1},"a":{"b":1}}',
    b'{ "a" : 1 , "a" : 2 }',                        # whitespace around the separators
]


@pytest.mark.parametrize("text", DUPLICATES)
def test_duplicate_keys_are_refused_with_the_key_named(text):
    kind, message = agree(text)
    assert kind == "error" and "duplicate key" in message and "'m.json'" in message


ACCEPTED = [
    b'{"a:":1,"a":2}',                                # "a:" and "a" are different keys
    b'{"a":"::","b":":","c":[":",{"d":"\\":"}]}',     # colons in values and after escaped quotes
    b'{"a\\\\":1,"a\\\\\\\\":2,"q":"\\\\\\":"}',      # runs of backslashes before quotes
    b'{"\\u0061":1,"b":2}',
    b'"just a string: with a colon"',
    b"5",
    b"[]",
    b"{}",
    b'{"caf\\u00e9":"\xc3\xa9:\xe2\x82\xac"}',        # UTF-8 text around the colons
    b"[" * 200 + b"]" * 200,                          # exactly the depth limit
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_fast_parse_agrees_on_tricky_documents(text):
    kind, value = agree(text)
    assert kind == "ok"
    assert jsonio._loads_fast(text, text.decode("utf-8")) == value  # proved clean without the hook


def test_escaped_colon_key_repeats_a_real_one():
    # "\u003a" is the key ":", so the object above repeats it: refused like any duplicate
    kind, message = agree(b'{"\\u003a":1,":":2}')
    assert kind == "error" and "duplicate key ':'" in message


def test_depth_limit_is_exact():
    assert agree(b"[" * 200 + b"]" * 200)[0] == "ok"
    for n in (201, 999, 5000):
        kind, message = agree(b"[" * n + b"]" * n)
        assert kind == "error" and "deeper than 200" in message, message
    nested = b'{"a":' * 201 + b"1" + b"}" * 201
    assert "deeper than 200" in agree(nested)[1]


def test_other_errors_keep_their_words():
    assert "non-finite" in agree(b'{"a":NaN}')[1]
    assert "invalid JSON" in agree(b'{"a":1,')[1]
    # two faults: the reference parse decides which one is reported
    assert agree(b'[{"a":1,"a":2}, oops')[1] == outcome(jsonio._loads_checked, '[{"a":1,"a":2}, oops', "m.json")[1]
    assert "not UTF-8" in outcome(jsonio.loads, b"\xff", "m.json")[1]


def test_the_fast_path_is_taken_for_clean_documents():
    doc = {"nodes": [{"k": "sym", "v": ["Symbol", "s:0", {"integer": True}]}, {"a": "x\\\"y:"}] * 50}
    raw = jsonio.dumps(doc)
    assert jsonio._loads_fast(raw, raw.decode()) == doc
    dup = b'{"a":{"k":1,"k":2}}'
    assert jsonio._loads_fast(dup, dup.decode()) is jsonio._UNPROVEN


_ALPHABET = ['a', 'b', ':', '"', '\\', '\u00e9', ' ', '{', '}', '[', ']', ',']


def _random_key(rng: random.Random) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 3)))


def _random_text(rng: random.Random, depth: int = 0) -> str:
    """JSON text that may repeat keys (a dict could not): objects are written by hand."""
    r = rng.random()
    if depth > 4 or r < 0.3:
        return json.dumps(rng.choice([1, -2.5, None, True, _random_key(rng)]), ensure_ascii=rng.random() < 0.5)
    if r < 0.55:
        return "[" + ",".join(_random_text(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"
    keys = [_random_key(rng) for _ in range(rng.randint(0, 4))]
    if keys and rng.random() < 0.2:
        keys.append(rng.choice(keys))  # a repeat, maybe spelled differently below
    parts = []
    for k in keys:
        spelled = json.dumps(k, ensure_ascii=rng.random() < 0.5)
        if rng.random() < 0.2:
            spelled = '"' + "".join(f"\\u{ord(c):04x}" for c in k) + '"'
        parts.append(spelled + rng.choice([":", " : "]) + _random_text(rng, depth + 1))
    return "{" + ",".join(parts) + "}"


def test_random_documents_agree_with_the_reference():
    rng = random.Random(19)
    outcomes = {"ok": 0, "error": 0}
    counted_exactly = 0
    for _ in range(3000):
        text = _random_text(rng).encode("utf-8")
        kind, value = agree(text)
        outcomes[kind] += 1
        fast = jsonio._loads_fast(text, text.decode("utf-8"))
        if kind == "ok":
            # every clean document is proved clean without the hook (no needless slow parse)
            assert fast is not jsonio._UNPROVEN and fast == value, text
            keys, _ = jsonio._keys_and_depth(value)
            counted_exactly += keys != text.count(b":")
        else:
            assert fast is jsonio._UNPROVEN, text
    # both outcomes, and clean documents with colons inside strings, were exercised
    assert min(outcomes.values()) > 200 and counted_exactly > 50, (outcomes, counted_exactly)
