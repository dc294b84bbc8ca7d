"""Source locations of a loaded program print the text their archive stored, never a local file's
(an archive names any file: /proc/self/environ, a settings module)."""
from __future__ import annotations

import io
import json
import zipfile

import numpy as np

import tensorplay_export as tpe
from tensorplay_export import Dim

PROGRAM = "models/model/program.json"


def model(x):
    return x * 2 + 1  # the line the program's nodes come from


def archive() -> bytes:
    buf = io.BytesIO()
    tpe.save(tpe.export(model, np.ones((3, 2)), dynamic_shapes={"x": {0: Dim("n")}}), buf)
    return buf.getvalue()


def sources(ep) -> list:
    return [n.meta["source"] for n in ep.graph.nodes if n.op == "call_function" and n.meta.get("source")]


def rewrite(data: bytes, edit) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == PROGRAM:
                doc = json.loads(body)
                for node in doc["graph"]["nodes"]:
                    if isinstance(node["meta"].get("source"), dict):
                        edit(node["meta"]["source"])
                body = json.dumps(doc).encode()
            dst.writestr(info, body)
    return out.getvalue()


def test_a_saved_program_keeps_the_text_of_the_users_line():
    locs = sources(tpe.load(io.BytesIO(archive())))
    assert locs and all("x * 2 + 1" in loc.text for loc in locs)
    assert all("the line the program's nodes come from" in str(loc) for loc in locs)


def test_a_location_naming_a_local_file_prints_only_its_stored_text(tmp_path):
    secret = tmp_path / "settings.py"
    secret.write_text("API_KEY = 'do-not-print'\n")

    def point_at_secret(src):
        src.update(file=str(secret), line=1, text="y = x + 1")

    locs = sources(tpe.load(io.BytesIO(rewrite(archive(), point_at_secret))))
    assert locs and all(loc.text == "y = x + 1" and "do-not-print" not in str(loc) for loc in locs)


def test_an_older_location_without_text_reads_no_file(tmp_path):
    secret = tmp_path / "settings.py"
    secret.write_text("API_KEY = 'do-not-print'\n")

    def schema_1_record(src):
        src.pop("text")
        src.update(file=str(secret), line=1)

    locs = sources(tpe.load(io.BytesIO(rewrite(archive(), schema_1_record))))
    assert locs and all(loc.text == "" and "do-not-print" not in str(loc) for loc in locs)


def test_stored_text_that_is_no_printable_line_is_refused():
    import pytest

    with pytest.raises(tpe.ArchiveError, match="source text must be one printable line"):
        tpe.load(io.BytesIO(rewrite(archive(), lambda src: src.update(text="a\nb"))))
