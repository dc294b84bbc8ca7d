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
