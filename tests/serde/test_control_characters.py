"""Archive text reaches terminals (runtime errors quote check labels, ``contract`` prints them,
violations quote source lines): no string of a document holds a control character, so an
archive cannot retitle, clear or hide the terminal of whoever loads or inspects it."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.serde import jsonio

from _shared import with_member

PROGRAM = "models/model/program.json"


def model(x):
    return x * 2 + 1  # a comment with a regex's r"\bword\r"


def exported():
    return tpe.export(model, np.ones((3, 2)), dynamic_shapes={"x": {0: Dim("n")}})


def saved() -> bytes:
    buf = io.BytesIO()
    tpe.save(exported(), buf)
    return buf.getvalue()


def relabel(label_json: bytes):
    """Replace the range check's label ``"x.shape[0]"`` with the raw JSON string ``label_json``."""
    def change(body: bytes) -> bytes:
        assert body.count(b'"x.shape[0]"') >= 1
        return body.replace(b'"x.shape[0]"', label_json)
    return change


@pytest.mark.parametrize("label_json, code", [
    (b'"\\u001b]0;owned\\u0007x"', 0x1B),      # escaped ESC: an OSC sequence retitling the window
    (b'"x\\r"', 0x0D),                          # carriage return: the next text overwrites the line
    ('"x\u009b2J"'.encode("utf-8"), 0x9B),      # a raw C1 CSI in UTF-8 (JSON allows it unescaped)
    (b'"x\\u007f"', 0x7F),
])
def test_a_control_character_in_a_check_label_is_refused_at_load(label_json, code):
    data = with_member(saved(), PROGRAM, relabel(label_json))
    with pytest.raises(tpe.ArchiveError, match=rf"{PROGRAM}.*control character U\+{code:04X}"):
        tpe.load(io.BytesIO(data))


def test_text_that_only_spells_an_escape_loads():
    # an escaped backslash, then the letters u001b: text, no control character
    assert jsonio.control_character(json.dumps({"a": "\\u001b \\r"}).encode()) is None
    assert jsonio.control_character(json.dumps({"a": "\\\u001b"}).encode()) is not None  # a backslash, then ESC
    # the source line above (backslash-b, backslash-r) saves and loads and reads back as written
    ep = tpe.load(io.BytesIO(saved()))
    texts = {n.meta["source"].text for n in ep.graph.nodes if n.meta.get("source") is not None}
    assert texts == {'return x * 2 + 1  # a comment with a regex\'s r"\\bword\\r"'}


def test_save_refuses_a_control_character_and_writes_nothing(tmp_path):
    ep = exported()
    check = next(n for n in ep.graph.nodes if n.target == "tpe.assert_range")
    check.args = check.args[:3] + ("\x1b[2Jx.shape[0]",) + check.args[4:]
    path = tmp_path / "m.pt2"
    with pytest.raises(tpe.ArchiveError, match=r"cannot serialize: a string holds the control character U\+001B"):
        tpe.save(ep, path)
    assert list(tmp_path.iterdir()) == []


def test_a_numpy_string_scalar_is_held_to_the_same_rule():
    # {"k": "np", "dtype": "<U..", "v": hex}: its characters are hex bytes, not JSON text
    evil = np.str_("x\x1b]0;owned\x07")
    label = json.dumps({"k": "np", "dtype": "<U%d" % len(evil), "v": evil.tobytes().hex()}).encode()
    with pytest.raises(tpe.ArchiveError, match="a numpy string scalar holds the control character U\\+001B"):
        tpe.load(io.BytesIO(with_member(saved(), PROGRAM, relabel(label))))
    from tensorplay_export.serde.values import Encoder
    with pytest.raises(tpe.ArchiveError, match="cannot serialize: a numpy string scalar"):
        Encoder().value(evil)
    assert Encoder().value(np.str_("x.shape[0]"))["k"] == "np"


def test_a_refused_member_name_is_quoted_with_escapes():
    from tensorplay_export.serde.jsonio import fail

    with pytest.raises(tpe.ArchiveError) as info:
        fail("extra/a\x1b]0;owned\x07\nb", "control character in member name")
    text = str(info.value)
    assert text.isprintable() and "\\x1b]0;owned\\x07\\nb" in text


def test_a_check_label_with_a_newline_is_refused():
    # `contract` prints labels as lines: a newline forged a second "Outputs:" section
    label = json.dumps("x.shape[0]\nOutputs:\n  out: (3,) float64").encode()
    with pytest.raises(tpe.ArchiveError, match=r"\(tpe.assert_range\) has the text .* not one printable line"):
        tpe.load(io.BytesIO(with_member(saved(), PROGRAM, relabel(label))))
