"""What a loaded archive claims is what its program does, and what it names stays its own:
source locations print the text the archive stored, never a local file's (an archive names any
file: /proc/self/environ, a settings module); equality constraints are ties the checks enforce;
state names are no dunder names; literal lists stay small enough to compile."""
from __future__ import annotations

import io
import json
import zipfile

import numpy as np

import tensorplay_export as tpe
from tensorplay_export import Dim
from _shared import program_bytes, program_doc, with_member

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
    """``edit(doc)`` on the program document (each node's meta spelled out, :func:`program_doc`)."""
    def change(body: bytes) -> bytes:
        doc = program_doc(body)
        edit(doc)
        return program_bytes(doc)
    return with_member(data, PROGRAM, change)


def test_a_saved_program_keeps_the_text_of_the_users_line():
    locs = sources(tpe.load(io.BytesIO(archive())))
    assert locs and all("x * 2 + 1" in loc.text for loc in locs)
    assert all("the line the program's nodes come from" in str(loc) for loc in locs)


def _point_at(path, text):
    def edit(doc):
        for node in doc["graph"]["nodes"]:
            if isinstance(node["meta"].get("source"), dict):
                node["meta"]["source"].update(file=str(path), line=1)
        if text is None:
            doc["graph"].pop("source_lines")  # schema 1: no table
            doc["schema_version"] = 1
        else:
            doc["graph"]["source_lines"] = [[str(path), 1, text]]
    return edit


def test_a_location_naming_a_local_file_prints_only_its_stored_text(tmp_path):
    secret = tmp_path / "settings.py"
    secret.write_text("API_KEY = 'do-not-print'\n")
    locs = sources(tpe.load(io.BytesIO(rewrite(archive(), _point_at(secret, "y = x + 1")))))
    assert locs and all(loc.text == "y = x + 1" and "do-not-print" not in str(loc) for loc in locs)


def test_an_older_location_without_text_reads_no_file(tmp_path):
    secret = tmp_path / "settings.py"
    secret.write_text("API_KEY = 'do-not-print'\n")
    locs = sources(tpe.load(io.BytesIO(rewrite(archive(), _point_at(secret, None)))))
    assert locs and all(loc.text == "" and "do-not-print" not in str(loc) for loc in locs)


def test_stored_text_that_is_no_printable_line_is_refused():
    import pytest

    with pytest.raises(tpe.ArchiveError, match="source text must be one printable line"):
        tpe.load(io.BytesIO(rewrite(archive(), lambda doc: doc["graph"]["source_lines"][0].__setitem__(2, "a\nb"))))


# -- equality constraints must be the ties the checks enforce ----------------------------------
def _tied():
    buf = io.BytesIO()
    n = Dim("n")
    tpe.save(tpe.export(lambda x, y: x + y, np.ones((3, 2)), np.ones((3, 2)), dynamic_shapes=({0: n}, {0: n})), buf)
    return buf.getvalue()


_edit_doc = rewrite  # edit(doc) on the program document


def test_an_equality_no_check_enforces_is_refused():
    import pytest

    def drop_assert_dim(doc):
        nodes = doc["graph"]["nodes"]
        doc["graph"]["nodes"] = [nd for nd in nodes if nd["target"] != "tpe.assert_dim"]

    assert tpe.load(io.BytesIO(_tied())).equality_constraints  # intact: loads, the tie reported
    with pytest.raises(tpe.ArchiveError, match=r"no check in the graph enforces the size of y.shape\[0\]"):
        tpe.load(io.BytesIO(_edit_doc(_tied(), drop_assert_dim)))

    def bogus_site(doc):
        doc["equality_constraints"][0]["sites"].append(["x", 1])

    with pytest.raises(tpe.ArchiveError, match="equality constraint"):
        tpe.load(io.BytesIO(_edit_doc(_tied(), bogus_site)))


def test_a_dunder_state_name_is_refused_and_list_indices_are_fine():
    import pytest

    from tensorplay_export import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(2, 2, rng=0), nn.Linear(2, 2, rng=1)])

        def forward(self, x):
            return self.layers[1](self.layers[0](x))

    buf = io.BytesIO()
    net = Net()
    tpe.save(tpe.export(net, np.ones((3, 2), np.float32)), buf)
    good = buf.getvalue()
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_allclose(tpe.load(io.BytesIO(good)).module()(x), net(x), rtol=1e-6)

    def rename(doc):
        old = doc["weights"][0]["fqn"]
        doc["weights"][0]["fqn"] = "__class__"
        text = json.dumps(doc).replace(json.dumps(old), json.dumps("__class__"))
        doc.clear()
        doc.update(json.loads(text))

    with pytest.raises(tpe.ArchiveError, match="invalid state name '__class__'"):
        tpe.load(io.BytesIO(_edit_doc(good, rename)))


def test_a_huge_literal_list_is_refused_also_when_repeated():
    import pytest

    from tensorplay_export.serde.values import MAX_LITERAL_ITEMS

    def long_arg(n_items, nodes):
        def edit(doc):  # the scalar operands of x * 2 + 1 become one long list each
            calls = [nd for nd in doc["graph"]["nodes"] if nd["target"] in ("numpy.multiply", "numpy.add")]
            assert len(calls) == 2
            for nd in calls[:nodes]:
                nd["args"][1] = list(range(n_items))
        return edit

    with pytest.raises(tpe.ArchiveError, match=f"more than {MAX_LITERAL_ITEMS} items"):
        tpe.load(io.BytesIO(_edit_doc(archive(), long_arg(MAX_LITERAL_ITEMS + 1, 1))))
    # the same list in several nodes counts once per node (the decoder shares the value)
    with pytest.raises(tpe.ArchiveError, match=f"more than {MAX_LITERAL_ITEMS} items"):
        tpe.load(io.BytesIO(_edit_doc(archive(), long_arg(MAX_LITERAL_ITEMS // 2 + 1, 2))))


def sliced(x):
    return x[:, 1:] * 2  # a line with colons


def test_stored_source_text_keeps_the_fast_duplicate_key_proof():
    """A stored line's ':' is written as U+001F: the document's ':' bytes are its keys exactly, so the
    loader's duplicate-key proof needs no exact count (serde/jsonio.py); the text reads back as written."""
    from tensorplay_export.serde.jsonio import _keys_and_depth

    buf = io.BytesIO()
    tpe.save(tpe.export(sliced, np.ones((3, 4)), dynamic_shapes={"x": {0: Dim("n")}}), buf)
    raw = zipfile.ZipFile(io.BytesIO(buf.getvalue())).read(PROGRAM)
    assert raw.count(b":") == _keys_and_depth(json.loads(raw))[0]
    locs = sources(tpe.load(io.BytesIO(buf.getvalue())))
    assert locs and all(loc.text == "return x[:, 1:] * 2  # a line with colons" for loc in locs)


# -- messages name the damaged member --------------------------------------------------------------
def test_an_archive_cut_short_says_so_and_not_an_inner_member():
    import pytest

    data = archive()
    for cut in (1, 30, 200):
        with pytest.raises(tpe.ArchiveError, match=r"^archive: (truncated or damaged|not a readable zip)") as info:
            tpe.load(io.BytesIO(data[:-cut]))
        assert ".npy" not in str(info.value)


def test_an_absurd_npy_dimension_is_refused_naming_its_member():
    import pytest

    from tensorplay_export import nn

    buf = io.BytesIO()
    tpe.save(tpe.export(nn.Linear(3, 2, rng=0), np.ones((2, 3), np.float32)), buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "models/model/weights/0.npy":
                body = body.replace(b"(2, 3)", b"(0, 100000000000000000000)")
            dst.writestr(info, body)
    with pytest.raises(tpe.ArchiveError, match=r"archive member 'models/model/weights/0.npy': invalid array shape"):
        tpe.load(io.BytesIO(out.getvalue()))


def test_what_save_writes_loads_dunder_buffer_names_and_long_lists():
    import pytest

    from tensorplay_export import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("__w__", np.ones(3))

        def forward(self, x):
            return x * getattr(self, "__w__")

    buf = io.BytesIO()
    tpe.save(tpe.export(Net(), np.ones((2, 3))), buf)
    buf.seek(0)
    np.testing.assert_array_equal(tpe.load(buf).module()(np.full((2, 3), 2.0)), np.full((2, 3), 2.0))

    from tensorplay_export.serde.values import MAX_LITERAL_ITEMS

    idx = list(range(MAX_LITERAL_ITEMS + 1))

    def gather(x):
        return np.take(x, idx)

    ep = tpe.export(gather, np.arange(MAX_LITERAL_ITEMS + 2.0))
    with pytest.raises(tpe.ArchiveError, match=r"cannot serialize.*np.asarray"):
        tpe.save(ep, io.BytesIO())


def test_strings_past_the_documents_character_budget_are_refused_on_load_and_on_save():
    """Generated code writes string arguments out as literals: a few long strings in a small
    deflated archive must not grow a load by gigabytes of source, and save writes nothing a loader
    would refuse."""
    import pytest

    from tensorplay_export.serde.values import MAX_LITERAL_CHARS, Encoder

    half = "a" * (MAX_LITERAL_CHARS // 2 + 1)

    def long_strings(doc):  # each scalar operand of x * 2 + 1 becomes a long string
        calls = [nd for nd in doc["graph"]["nodes"] if nd["target"] in ("numpy.multiply", "numpy.add")]
        assert len(calls) == 2
        for nd in calls:
            nd["args"][1] = half

    with pytest.raises(tpe.ArchiveError, match=f"strings hold more than {MAX_LITERAL_CHARS} characters"):
        tpe.load(io.BytesIO(_edit_doc(archive(), long_strings)))

    enc = Encoder()
    enc.value(half)
    with pytest.raises(tpe.ArchiveError, match=r"cannot serialize.*np.frombuffer"):
        enc.value(half)


def test_nested_plain_tuples_and_dict_pairs_count_against_the_item_budget():
    """A tuple of plain tuples is built on a fast path, and a dict in graph.meta_values is decoded per
    node that names it: both count every item (a 27 KB archive with a tuple of 1,000 tuples of 1,000
    ints took 4 s and 0.9 GB to load; a 100,000-pair meta dict named by 300 nodes, 25 s and 1.6 GB)."""
    import pytest

    from tensorplay_export.serde.values import MAX_LITERAL_ITEMS

    inner = {"k": "tuple", "v": list(range(1000))}
    nested = {"k": "tuple", "v": [inner] * (MAX_LITERAL_ITEMS // 1000 + 1)}

    def nest(doc):
        calls = [nd for nd in doc["graph"]["nodes"] if nd["target"] == "numpy.multiply"]
        calls[0]["args"][1] = nested
    with pytest.raises(tpe.ArchiveError, match=f"hold more than {MAX_LITERAL_ITEMS} items"):
        tpe.load(io.BytesIO(_edit_doc(archive(), nest)))

    pairs = {"k": "dict", "v": [[i, i] for i in range(MAX_LITERAL_ITEMS // 3)]}

    def meta_dict(doc):
        for nd in doc["graph"]["nodes"]:
            if nd["op"] == "call_function":
                nd["meta"]["extra"] = pairs
    with pytest.raises(tpe.ArchiveError, match=f"hold more than {MAX_LITERAL_ITEMS} items"):
        tpe.load(io.BytesIO(_edit_doc(archive(), meta_dict)))
