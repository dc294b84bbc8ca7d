"""Program schema 3: node meta values stored once each in ``graph.meta_values`` (issue 19 goal 3).

The writer moves every meta value that is not a string or null into the table and names it
by index; the loader resolves the indices and refuses any table a writer would not write.
"""
from __future__ import annotations

import json

import pytest

from tensorplay_export.errors import ArchiveError

from conftest import archive_bytes, members_of
from test_hostile import PROGRAM, edit, expect_error, load_bytes, node


@pytest.fixture(scope="module")
def good(small_program) -> bytes:
    return archive_bytes(small_program)


def raw_doc(data: bytes) -> dict:
    """The document exactly as stored (the table in place, unlike ``program_doc``)."""
    return json.loads(members_of(data)[PROGRAM])


def test_each_distinct_meta_value_is_stored_once(good):
    doc = raw_doc(good)
    table, nodes = doc["graph"]["meta_values"], doc["graph"]["nodes"]
    refs = [v for n in nodes for v in n["meta"].values() if type(v) is int]
    assert all(type(v) is int or v is None or type(v) is str for n in nodes for v in n["meta"].values())
    assert sorted(set(refs)) == list(range(len(table)))  # every entry used
    assert len(refs) > len(table)  # shared: the program's nodes repeat shapes and dtypes
    assert len({json.dumps(v, sort_keys=True) for v in table}) == len(table)  # none twice
    first_use = list(dict.fromkeys(n["meta"][k] for n in nodes for k in sorted(n["meta"])
                                   if type(n["meta"][k]) is int))
    assert first_use == list(range(len(table)))


def test_a_loaded_node_gets_its_own_values(good, small_program):
    loaded = load_bytes(good)
    want = {n.name: (n.meta.get("shape"), n.meta.get("dtype")) for n in small_program.graph.nodes}
    got = {n.name: (n.meta.get("shape"), n.meta.get("dtype")) for n in loaded.graph.nodes}
    assert got == want


def _raw_edit(good: bytes, fn) -> bytes:
    doc = raw_doc(good)
    fn(doc)
    return edit(good, models__model__program_DOT_json=json.dumps(doc).encode())


@pytest.mark.parametrize("index, words", [
    (10_000, "names entry 10000 of graph.meta_values, which has"),
    (-1, "names entry -1 of graph.meta_values"),
    (True, "must be a string, null or an index into graph.meta_values"),
    (1.0, "must be a string, null or an index into graph.meta_values"),
    ({"k": "dtype", "v": "<f4"}, "must be a string, null or an index into graph.meta_values"),
])
def test_a_bad_index_is_refused(good, index, words):
    expect_error(_raw_edit(good, lambda d: node(d, "matmul")["meta"].update(dtype=index)), PROGRAM, words)


def test_an_unused_entry_is_refused(good):
    def fn(d):
        d["graph"]["meta_values"].append({"k": "dtype", "v": "<f8"})
    expect_error(_raw_edit(good, fn), PROGRAM, "is not the meta of any node")


def test_the_table_must_be_a_list(good):
    expect_error(_raw_edit(good, lambda d: d["graph"].update(meta_values={"0": 1})), PROGRAM, "graph.meta_values")


def test_a_damaged_shared_entry_is_refused(good):
    def fn(d):  # a well-formed value, but no shape: the node checks run on table entries too
        at = node(d, "matmul")["meta"]["shape"]
        d["graph"]["meta_values"][at] = {"k": "tuple", "v": [1, {"k": "float", "v": (2.5).hex()}]}
    with pytest.raises(ArchiveError, match=r"meta\['shape'\]"):
        load_bytes(_raw_edit(good, fn))


def test_nodes_naming_one_entry_share_its_value_unless_it_can_change(good):
    """A shared tuple is decoded once (its nodes hold one object); a dict (``bind``) is each node's own."""
    doc = raw_doc(good)
    loaded = {n.name: n for n in load_bytes(good).graph_module._graph.nodes}
    by_entry: dict = {}
    for n in doc["graph"]["nodes"]:
        for key, at in n["meta"].items():
            if type(at) is int:
                by_entry.setdefault(at, []).append((n["name"], key))
    shared = [sites for sites in by_entry.values() if len(sites) > 1]
    assert shared
    for sites in shared:
        values = [loaded[name].meta[key] for name, key in sites]
        if isinstance(values[0], (dict, list)):
            assert len({id(v) for v in values}) == len(values)
        else:
            assert all(v is values[0] for v in values)
