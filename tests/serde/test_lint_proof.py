"""Loading lints a graph only when a rule is in doubt: the rules it proves instead stay in step with lint.

``program_load._build_graph`` checks the few lint rules a document can break while it
builds the graph, and runs ``Graph.lint`` (whose words the errors keep) only when one
of them may be broken; ``_LINT_RULES`` says why the others hold by construction.
"""
from __future__ import annotations

import ast
import copy
import inspect
import textwrap

import pytest

from tensorplay_export.graph.ir import Graph
from tensorplay_export.serde import program_load

from conftest import archive_bytes
from test_hostile import PROGRAM, edit, expect_error, load_bytes, node


def _lint_messages() -> list[str]:
    """The constant text of every message Graph.lint raises (its fail(...) and RuntimeError(...) calls)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(Graph.lint)))
    out = []
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) in ("fail", "RuntimeError") and call.args:
            arg = call.args[0]
            parts = [arg] if isinstance(arg, ast.Constant) else getattr(arg, "values", [])
            out.append("".join(p.value for p in parts if isinstance(p, ast.Constant) and isinstance(p.value, str)))
    return [text for text in out if not text.startswith("lint: node ")]  # the wrapper that adds the node name


def test_every_lint_rule_is_accounted_for():
    messages = _lint_messages()
    assert len(messages) >= 16  # the parse found lint's rules
    for text in messages:
        assert any(key in text for key in program_load._LINT_RULES), (
            f"Graph.lint has a rule program_load._LINT_RULES does not account for: {text!r}; "
            "say there why a loaded graph keeps it, or put it in doubt")
    for key in program_load._LINT_RULES:
        assert any(key in text for text in messages), f"_LINT_RULES names a rule lint no longer has: {key!r}"


@pytest.fixture(scope="module")
def good(small_program) -> bytes:
    return archive_bytes(small_program)


def _move_output_before(d, name):
    nodes = d["graph"]["nodes"]
    out = nodes.pop()
    out["args"] = [[{"k": "node", "v": "getitem"}]]  # a value defined before it
    nodes.insert(nodes.index(node(d, name)), out)


@pytest.mark.parametrize("doc_fn, words", [
    (lambda d: _move_output_before(d, "add_1"), "node after the output node"),
    (lambda d: d["graph"]["nodes"].append(copy.deepcopy(d["graph"]["nodes"][-1]) | {"name": "output_2"}),
     "node after the output node"),
    (lambda d: node(d, "b_shift").update(args=[1]), "placeholder with arguments"),
    (lambda d: node(d, "b_shift").update(kwargs=[["a", 1]]), "placeholder with arguments"),
    (lambda d: node(d, "output").update(args=[]), "output must have args"),
    (lambda d: node(d, "output").update(args=[1]), "output must have args"),
    (lambda d: node(d, "output").update(args=[{"k": "node", "v": "add_1"}]), "output must have args"),
    (lambda d: node(d, "add")["meta"].pop("shape"), "meta['shape'] is missing"),
    (lambda d: node(d, "x")["meta"].pop("shape"), "meta['shape'] is missing"),
])
def test_rules_in_doubt_are_linted_with_lints_words(good, doc_fn, words):
    expect_error(edit(good, doc_fn), PROGRAM, "graph is malformed: lint: ")
    expect_error(edit(good, doc_fn), PROGRAM, words)


def test_a_loaded_graph_passes_lint(good):
    ep = load_bytes(good)
    ep.graph.lint()  # what loading proved instead of running it
