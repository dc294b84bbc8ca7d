"""Flatten nested inputs/outputs into leaves and back, with printable leaf paths.

Containers are ``tuple``, ``list``, ``dict`` (insertion order), ``None`` (a
container with no leaves), namedtuples (``collections.namedtuple``,
``typing.NamedTuple``, numpy's ``SVDResult``, ...: flattened field by field and
rebuilt as the same type, as torch's and jax's pytrees do) and dataclasses
registered with :func:`register_dataclass`.  Everything else -- arrays, numbers,
strings, unregistered objects -- is a leaf.

A :class:`TreeSpec` records the container skeleton.  It round-trips through a
JSON-able dict (:func:`treespec_to_json` / :func:`treespec_from_json`); loading
resolves dataclasses only through the names registered here, never by
importing a dotted path, so an archive cannot make us import code.  A stored
namedtuple keeps its type name and field names: loading gives the type
registered under that name (:func:`register_namedtuple`; numpy's result types
are registered here) when its fields match, else a namedtuple type built from
the stored name and fields -- never an import.

Leaf paths print the way a user would index the value: ``[0]``, ``['scale']``,
``.field``; :func:`tree_leaves_with_path` prepends a caller-chosen root such as
``"x"`` or ``"args"`` (``"x"``, ``"extras['scale']"``, ``"args[1]"``).
"""
from __future__ import annotations

import collections
import contextlib
import contextvars
import dataclasses
import functools
import keyword
import os
import sys
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .errors import ArchiveError

__all__ = [
    "TreeSpec",
    "LEAF",
    "tree_flatten",
    "tree_unflatten",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "register_dataclass",
    "is_registered_dataclass",
    "register_namedtuple",
    "is_namedtuple",
    "default_type_name",
    "accept_main_names",
    "treespec_to_json",
    "treespec_from_json",
    "key_str",
    "unregistered_dataclasses_as_names",
    "UnresolvedDataclass",
]

# Built-in container kinds as they appear in TreeSpec.kind and in JSON.
_TUPLE, _LIST, _DICT, _NONE, _LEAF = "tuple", "list", "dict", "None", "leaf"
_NAMEDTUPLE = "namedtuple"
_BUILTIN_KINDS = (_TUPLE, _LIST, _DICT, _NONE, _LEAF, _NAMEDTUPLE)
# JSON may carry these dict-key types; anything else is refused on save.
_KEY_TYPES = (str, int, bool, float, type(None))


@dataclass(frozen=True)
class _DataclassEntry:
    cls: type
    name: str
    fields: tuple[str, ...]
    return_none_fields: bool


_BY_CLASS: dict[type, _DataclassEntry] = {}
_BY_NAME: dict[str, _DataclassEntry] = {}

# Reading a program's contract or code needs only the names of its dataclasses, not the classes:
# inside unregistered_dataclasses_as_names() an unregistered name is kept as a name.
_KEEP_NAMES: contextvars.ContextVar[bool] = contextvars.ContextVar("tpe_keep_dataclass_names", default=False)


@contextlib.contextmanager
def unregistered_dataclasses_as_names() -> Iterator[None]:
    """Within this block, loading keeps unregistered dataclass names instead of refusing them.

    Treespecs keep the name (``TreeSpec.kind``) and the field names stored in the
    archive; dataclass values decode to :class:`UnresolvedDataclass`.  Building
    an instance (``tree_unflatten``, i.e. running the program) still raises
    ``ArchiveError`` asking for ``register_dataclass``.  Used by the CLI's
    ``contract``, ``show``, ``diff`` and ``compose``, which read a program and
    never run it.  A loaded program's example inputs are built when first read,
    under the rule in force then.
    """
    token = _KEEP_NAMES.set(True)
    try:
        yield
    finally:
        _KEEP_NAMES.reset(token)


def keeping_names() -> bool:
    """True inside :func:`unregistered_dataclasses_as_names`."""
    return _KEEP_NAMES.get()


@dataclass(frozen=True)
class UnresolvedDataclass:
    """A stored dataclass value whose class is not registered: its serialized name and field values."""

    name: str
    fields: tuple  # ((field name, value), ...)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.fields)
        return f"<unregistered {self.name}({inner})>"


def main_module_name() -> str | None:
    """The name importing the running script gives it: ``train`` for ``python train.py``,
    ``pkg.train`` for ``python -m pkg.train``; None when ``__main__`` is no file (a notebook, a REPL)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and spec.name != "__main__":
        return spec.name
    path = getattr(main, "__file__", None)
    stem = os.path.splitext(os.path.basename(path))[0] if isinstance(path, str) else ""
    return stem if stem.isidentifier() and not keyword.iskeyword(stem) else None


def default_type_name(cls: type) -> str:
    """``module.qualname`` of a class, naming a class of the running script by the module
    importing that script gives (``train.Batch``, not ``__main__.Batch``).

    So an archive saved by ``python train.py`` names the class as one saved after
    ``import train`` does, and ``tensorplay-export run a.pt2 --import train.py`` (which
    imports the file as ``train``) finds it.  In a notebook it stays ``__main__.Batch``.
    """
    module = cls.__module__
    if module == "__main__":
        module = main_module_name() or module
    return f"{module}.{cls.__qualname__}"


def _same_class_imported_twice(a: type, b: type) -> bool:
    """``a`` and ``b`` are one script's class, once run as ``__main__`` and once imported by name."""
    mods = {a.__module__, b.__module__}
    return a.__qualname__ == b.__qualname__ and "__main__" in mods and mods - {"__main__"} == {main_module_name()}


def register_dataclass(cls: type, *, serialized_type_name: str | None = None,
                       return_none_fields: bool = True) -> type:
    """Register a dataclass as a pytree container (flattened field by field).

    Args:
        cls: a ``@dataclass`` class; its ``__init__`` must accept every field by name.
        serialized_type_name: the name written into serialized TreeSpecs; it must
            resolve back to ``cls`` when loading.  Defaults to ``module.qualname``
            (:func:`default_type_name`: a script's ``__main__`` is named as importing it names it).
        return_none_fields: when True a field holding ``None`` stays one leaf whose
            value is ``None`` (the leaf count does not depend on which fields are
            set); when False a ``None`` field is an empty container (no leaves).

    Returns:
        ``cls`` itself, so this can be used as a decorator.

    Raises:
        TypeError: ``cls`` is not a dataclass.
        ValueError: the serialized name is already taken by another class.
    """
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"register_dataclass expects a dataclass type, got {cls!r}")
    name = serialized_type_name or default_type_name(cls)
    if name in _BUILTIN_KINDS:
        raise ValueError(f"serialized_type_name {name!r} is reserved")
    taken = _BY_NAME.get(name)
    if taken is not None and taken.cls is not cls and not _same_class_imported_twice(taken.cls, cls):
        raise ValueError(f"serialized_type_name {name!r} is already registered for {taken.cls!r}")
    old = _BY_CLASS.get(cls)
    if old is not None and old.name != name:
        del _BY_NAME[old.name]
    fields = tuple(f.name for f in dataclasses.fields(cls))
    entry = _DataclassEntry(cls, name, fields, bool(return_none_fields))
    _BY_CLASS[cls] = entry
    _BY_NAME[name] = entry
    return cls


def is_registered_dataclass(obj_or_cls: Any) -> bool:
    cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
    return cls in _BY_CLASS


# --- namedtuples ----------------------------------------------------------------------

_NT_BY_NAME: dict[str, type] = {}   # serialized name -> registered namedtuple class
_NT_NAME_OF: dict[type, str] = {}   # registered or built class -> serialized name
# numpy's result types, under the names of the public functions returning them (their
# defining modules are private and move between numpy versions).
_NUMPY_NAMEDTUPLES = (
    ("numpy.linalg._linalg", "numpy.linalg", ("SVDResult", "EighResult", "EigResult", "SlogdetResult", "QRResult")),
    ("numpy.lib._arraysetops_impl", "numpy", ("UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult")),
)
_numpy_registered = False
MAX_NAMEDTUPLE_NAME = 200  # characters of a stored namedtuple type name


def is_namedtuple(cls: Any) -> bool:
    """True for a namedtuple class (``collections.namedtuple``, ``typing.NamedTuple``, numpy's results)."""
    if not (isinstance(cls, type) and issubclass(cls, tuple)):
        return False
    fields = getattr(cls, "_fields", None)
    return isinstance(fields, tuple) and all(type(f) is str for f in fields) and callable(getattr(cls, "_make", None))


def register_namedtuple(cls: type, *, serialized_type_name: str | None = None) -> type:
    """Name a namedtuple type so a loaded program rebuilds it (rather than a look-alike type).

    Every namedtuple flattens field by field without registration; registering
    only decides what loading an archive gives back: the stored name resolves
    to ``cls`` when the stored fields equal ``cls._fields``.  Without it, a
    load builds a namedtuple type of the stored name and fields.

    Args:
        cls: a namedtuple class.
        serialized_type_name: the name written into serialized TreeSpecs; defaults
            to ``module.qualname`` (:func:`default_type_name`).

    Returns:
        ``cls`` itself, so this can be used as a decorator.

    Raises:
        TypeError: ``cls`` is not a namedtuple class.
        ValueError: the name is already registered for another class.
    """
    if not is_namedtuple(cls):
        raise TypeError(f"register_namedtuple expects a namedtuple type, got {cls!r}")
    _register_numpy_namedtuples()
    name = serialized_type_name or default_type_name(cls)
    taken = _NT_BY_NAME.get(name)
    if taken is not None and taken is not cls and not _same_class_imported_twice(taken, cls):
        raise ValueError(f"serialized_type_name {name!r} is already registered for {taken!r}")
    old = _NT_NAME_OF.get(cls)
    if old is not None and _NT_BY_NAME.get(old) is cls:
        del _NT_BY_NAME[old]
    _NT_BY_NAME[name] = cls
    _NT_NAME_OF[cls] = name
    return cls


def _register_numpy_namedtuples() -> None:
    global _numpy_registered
    if _numpy_registered:
        return
    _numpy_registered = True
    import importlib

    for module, public, names in _NUMPY_NAMEDTUPLES:
        try:
            mod = importlib.import_module(module)
        except ImportError:  # another numpy layout: these load as built types of the same name and fields
            continue
        for n in names:
            cls = getattr(mod, n, None)
            if is_namedtuple(cls):
                _NT_BY_NAME[f"{public}.{n}"] = cls
                _NT_NAME_OF[cls] = f"{public}.{n}"


def _namedtuple_name(cls: type) -> str:
    """The serialized name of a namedtuple class: registered (or built on load) name, else module.qualname."""
    name = _NT_NAME_OF.get(cls)
    if name is None:
        _register_numpy_namedtuples()
        name = _NT_NAME_OF.get(cls) or default_type_name(cls)
    return name


def resolve_namedtuple(name: str, fields: tuple) -> type:
    """The namedtuple class for a stored type name and field names; no import happens.

    The class registered under ``name`` (:func:`register_namedtuple`; numpy's
    result types are registered) if its fields are ``fields``; else a
    namedtuple type named after the last dotted part of ``name`` with those
    fields, one per (name, fields) per process.

    Raises:
        ArchiveError: the name or a field name is not a valid identifier (a
            namedtuple cannot have it), or field names repeat.
    """
    _register_numpy_namedtuples()
    fields = tuple(fields)
    cls = _NT_BY_NAME.get(name)
    if cls is not None and cls._fields == fields:
        return cls
    return _built_namedtuple(name, fields)


@functools.lru_cache(maxsize=512)
def _built_namedtuple(name: str, fields: tuple) -> type:
    short = name.rpartition(".")[2]
    if len(name) > MAX_NAMEDTUPLE_NAME or not short.isidentifier() or keyword.iskeyword(short):
        raise ArchiveError(f"treespec namedtuple: {name!r:.80} is not a type name (its last part must be "
                           f"an identifier)")
    for i, f in enumerate(fields):
        # a leading underscore only as namedtuple(..., rename=True) names a field it renamed: _<position>
        if (not isinstance(f, str) or not f.isidentifier() or keyword.iskeyword(f)
                or (f.startswith("_") and f != f"_{i}")):
            raise ArchiveError(f"treespec namedtuple {name!r}: field {f!r:.80} is not a namedtuple field name")
    # namedtuple evaluates source holding the fields, where the parser NFKC-normalizes them
    if len({unicodedata.normalize("NFKC", f) for f in fields}) != len(fields):
        raise ArchiveError(f"treespec namedtuple {name!r}: repeated field names {list(fields)}")
    cls = collections.namedtuple(short, fields, module=__name__, rename=True)  # keeps every _<i> as it is
    _NT_NAME_OF[cls] = name
    return cls


def accept_main_names(module_name: str) -> None:
    """Let ``__main__.<qualname>`` stored in an archive resolve to the classes ``module_name``
    registered under their default names (the CLI's ``--import train.py``).

    An archive saved before :func:`default_type_name` named a script's classes as
    ``train.Batch`` stores ``__main__.Batch``; after ``--import train.py`` both names
    load as ``train.Batch``.  A name registered for a class of its own is left alone.
    """
    for entry in list(_BY_NAME.values()):
        cls = entry.cls
        if cls.__module__ == module_name and entry.name == f"{module_name}.{cls.__qualname__}":
            _BY_NAME.setdefault(f"__main__.{cls.__qualname__}", entry)
    for name, cls in list(_NT_BY_NAME.items()):
        if cls.__module__ == module_name and name == f"{module_name}.{cls.__qualname__}":
            _NT_BY_NAME.setdefault(f"__main__.{cls.__qualname__}", cls)


@dataclass(frozen=True)
class TreeSpec:
    """The container skeleton of a pytree.

    ``kind`` is ``"tuple"``, ``"list"``, ``"dict"``, ``"None"``, ``"leaf"``,
    ``"namedtuple"`` or a registered dataclass's serialized name.  ``context`` is
    the dict keys (in order) or the namedtuple's / dataclass's field names;
    ``none_fields`` lists the fields that were ``None`` of a dataclass registered
    with ``return_none_fields=False``.  A namedtuple's ``type_name`` is its
    serialized name (``"module.QualName"`` unless registered otherwise) and
    ``node_type`` the class rebuilt on unflatten; two specs are equal when their
    names, fields and children are, whichever class object they hold (a loaded
    program accepts the caller's own namedtuple of that name and fields).
    """

    kind: str
    context: tuple = ()
    children: tuple["TreeSpec", ...] = ()
    none_fields: tuple[str, ...] = ()
    type_name: str = ""
    node_type: Any = field(default=None, compare=False, repr=False)

    @property
    def num_leaves(self) -> int:
        if self.kind == _LEAF:
            return 1
        return sum(c.num_leaves for c in self.children)

    def is_leaf(self) -> bool:
        return self.kind == _LEAF

    def __repr__(self) -> str:
        if self.kind == _LEAF:
            return "*"
        if self.kind == _NONE:
            return "None"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == _TUPLE:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind == _LIST:
            return f"[{inner}]"
        if self.kind == _DICT:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.context, self.children)) + "}"
        if self.kind == _NAMEDTUPLE:
            return f"{self.type_name}(" + ", ".join(f"{k}={c!r}" for k, c in zip(self.context, self.children)) + ")"
        return f"{self.kind}(" + ", ".join(f"{k}={c!r}" for k, c in zip(self.context, self.children)) + ")"


_LEAF_SPEC = TreeSpec(_LEAF)
LEAF = _LEAF_SPEC
_NONE_SPEC = TreeSpec(_NONE)


def _children(obj: Any) -> tuple[str, tuple, list, tuple] | None:
    """(kind, context, child values, none_fields) for a container; None for a leaf."""
    t = type(obj)
    if obj is None:
        return _NONE, (), [], ()
    if t is tuple:
        return _TUPLE, (), list(obj), ()
    if t is list:
        return _LIST, (), list(obj), ()
    if t is dict:
        return _DICT, tuple(obj.keys()), list(obj.values()), ()
    if isinstance(obj, tuple) and is_namedtuple(t):
        return _NAMEDTUPLE, t._fields, list(obj), ()
    entry = _BY_CLASS.get(t)
    if entry is None:
        return None
    if entry.return_none_fields:
        return entry.name, entry.fields, [_NoneLeaf.wrap(getattr(obj, f)) for f in entry.fields], ()
    present = tuple(f for f in entry.fields if getattr(obj, f) is not None)
    nones = tuple(f for f in entry.fields if getattr(obj, f) is None)
    return entry.name, present, [getattr(obj, f) for f in present], nones


class _NoneLeaf:
    """Marks a None field of a ``return_none_fields=True`` dataclass: a leaf, not a container."""

    @staticmethod
    def wrap(value: Any) -> Any:
        return _NONE_LEAF if value is None else value


_NONE_LEAF = _NoneLeaf()


def tree_flatten(obj: Any) -> tuple[list, TreeSpec]:
    """Flatten ``obj`` into ``(leaves, spec)``; leaves in depth-first, left-to-right order."""
    leaves: list = []
    spec = _flatten(obj, leaves)
    return leaves, spec


def _flatten(obj: Any, leaves: list) -> TreeSpec:
    # Built-in containers and leaves first, without building (kind, context, values) parts.
    t = type(obj)
    if t in _CONTAINERS:
        children = []
        for v in (obj.values() if t is dict else obj):
            if (type(v) in _CONTAINERS or v is None or v is _NONE_LEAF or type(v) in _BY_CLASS
                    or isinstance(v, tuple)):
                children.append(_flatten(v, leaves))
            else:
                leaves.append(v)
                children.append(_LEAF_SPEC)
        if t is dict:
            return _spec(_DICT, tuple(obj), tuple(children), ())
        return _spec(_TUPLE if t is tuple else _LIST, (), tuple(children), ())
    if obj is None:
        return _NONE_SPEC
    if obj is _NONE_LEAF:
        leaves.append(None)
        return _LEAF_SPEC
    parts = _children(obj)
    if parts is None:
        leaves.append(obj)
        return _LEAF_SPEC
    kind, context, values, nones = parts
    children = tuple(_flatten(v, leaves) for v in values)
    if kind == _NAMEDTUPLE:
        return TreeSpec(kind, context, children, (), _namedtuple_name(t), t)
    return TreeSpec(kind, context, children, nones)


_CONTAINERS = frozenset({tuple, list, dict})


def _spec(kind: str, context: tuple, children: tuple, nones: tuple) -> TreeSpec:
    """TreeSpec(...) without the frozen dataclass __init__ (four object.__setattr__ calls)."""
    spec = object.__new__(TreeSpec)
    spec.__dict__.update(kind=kind, context=context, children=children, none_fields=nones, type_name="",
                         node_type=None)
    return spec


def tree_unflatten(leaves: list | tuple, spec: TreeSpec) -> Any:
    """Rebuild the tree from ``leaves`` and ``spec``.

    Raises:
        ValueError: the number of leaves does not match ``spec.num_leaves``.
    """
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten: spec {spec!r} needs {spec.num_leaves} leaves, got {len(leaves)}")
    it = iter(leaves)
    return _unflatten(it, spec)


def _unflatten(it: Iterator, spec: TreeSpec) -> Any:
    kind = spec.kind
    if kind == _LEAF:
        return next(it)
    if kind == _NONE:
        return None
    values = [next(it) if c.kind == _LEAF else _unflatten(it, c) for c in spec.children]
    if kind == _TUPLE:
        return tuple(values)
    if kind == _LIST:
        return values
    if kind == _DICT:
        return dict(zip(spec.context, values))
    if kind == _NAMEDTUPLE:
        cls = spec.node_type or resolve_namedtuple(spec.type_name, spec.context)
        return cls(*values)
    entry = _BY_NAME.get(kind)
    if entry is None and not _KEEP_NAMES.get():
        raise ArchiveError(f"tree_unflatten: dataclass {kind!r} is not registered (use register_dataclass)")
    fields = dict(zip(spec.context, values))
    for name in spec.none_fields:
        fields[name] = None
    if entry is None:
        return UnresolvedDataclass(kind, tuple(fields.items()))
    return entry.cls(**fields)


def tree_leaves(obj: Any) -> list:
    return tree_flatten(obj)[0]


def tree_map(fn: Callable[[Any], Any], obj: Any) -> Any:
    leaves, spec = tree_flatten(obj)
    return tree_unflatten([fn(x) for x in leaves], spec)


def key_str(kind: str, key: Any) -> str:
    """The path piece for one child: ``[0]`` for sequences, ``['k']`` for dicts, ``.f`` for namedtuples
    and dataclasses."""
    if kind in (_TUPLE, _LIST):
        return f"[{key}]"
    if kind == _DICT:
        return f"[{key!r}]"
    return f".{key}"


def tree_leaves_with_path(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """``[(path, leaf), ...]`` in :func:`tree_flatten` order.

    >>> tree_leaves_with_path({"scale": 1, "bias": [2, 3]}, "extras")
    [("extras['scale']", 1), ("extras['bias'][0]", 2), ("extras['bias'][1]", 3)]
    """
    out: list[tuple[str, Any]] = []
    _with_path(obj, prefix, out)
    return out


def treespec_leaf_paths(spec: TreeSpec, prefix: str = "") -> list[str]:
    """The path of each leaf of ``spec``, as :func:`tree_leaves_with_path` names the leaves of a tree
    with that spec; read from the spec alone, so a spec holding a dataclass this process has not
    registered (a loaded program's) is named too."""
    out: list[str] = []
    stack = [(spec, prefix)]
    while stack:
        s, path = stack.pop()
        if s.kind == _LEAF:
            out.append(path)
            continue
        keys = range(len(s.children)) if s.kind in (_TUPLE, _LIST) else s.context
        stack.extend(reversed([(c, path + key_str(s.kind, k)) for k, c in zip(keys, s.children)]))
    return out


def _with_path(obj: Any, path: str, out: list) -> None:
    if obj is _NONE_LEAF:
        out.append((path, None))
        return
    parts = _children(obj)
    if parts is None:
        out.append((path, obj))
        return
    kind, context, values, _ = parts
    keys = range(len(values)) if kind in (_TUPLE, _LIST) else context
    for key, value in zip(keys, values):
        _with_path(value, path + key_str(kind, key), out)


# --- JSON -----------------------------------------------------------------------------

def treespec_to_json(spec: TreeSpec) -> dict:
    """A JSON-able dict for ``spec`` (dict keys must be str/int/float/bool/None).

    Raises:
        ValueError: a dict key of another type (it could not be restored exactly).
    """
    node: dict[str, Any] = {"type": spec.kind}
    if spec.kind == _DICT:
        keys = []
        for key in spec.context:
            if not isinstance(key, _KEY_TYPES):
                raise ValueError(f"cannot serialize dict key {key!r} of type {type(key).__name__}")
            keys.append({"t": type(key).__name__, "v": key})
        node["keys"] = keys
    elif spec.kind == _NAMEDTUPLE:
        node["name"] = spec.type_name
        node["fields"] = list(spec.context)
    elif spec.kind not in _BUILTIN_KINDS:
        node["fields"] = list(spec.context)
        if spec.none_fields:
            node["none_fields"] = list(spec.none_fields)
    if spec.kind not in (_LEAF, _NONE):
        node["children"] = [treespec_to_json(c) for c in spec.children]
    return node


_KEY_DECODERS = {"str": str, "int": int, "float": float, "bool": bool, "NoneType": lambda v: None}


def treespec_from_json(data: Any) -> TreeSpec:
    """Inverse of :func:`treespec_to_json`.

    Raises:
        ArchiveError: malformed data, or a dataclass name that is not registered.
    """
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ArchiveError(f"treespec: expected an object with a string 'type', got {data!r}")
    kind = data["type"]
    if kind == _LEAF:
        return _LEAF_SPEC
    if kind == _NONE:
        return TreeSpec(_NONE)
    children_data = data.get("children")
    if not isinstance(children_data, list):
        raise ArchiveError(f"treespec {kind!r}: 'children' must be a list")
    children = tuple(treespec_from_json(c) for c in children_data)
    if kind in (_TUPLE, _LIST):
        return TreeSpec(kind, (), children)
    if kind == _DICT:
        raw = data.get("keys")
        if not isinstance(raw, list) or len(raw) != len(children):
            raise ArchiveError("treespec dict: 'keys' must be a list as long as 'children'")
        keys = []
        for item in raw:
            decode = _KEY_DECODERS.get(item.get("t")) if isinstance(item, dict) else None
            if decode is None:
                raise ArchiveError(f"treespec dict: bad key entry {item!r}")
            keys.append(decode(item.get("v")))
        return TreeSpec(_DICT, tuple(keys), children)
    if kind == _NAMEDTUPLE:
        name, fields = data.get("name"), data.get("fields")
        if not isinstance(name, str) or not isinstance(fields, list) or len(fields) != len(children):
            raise ArchiveError("treespec namedtuple: needs a string 'name' and 'fields' as long as 'children'")
        cls = resolve_namedtuple(name, tuple(fields))
        # a registered class under its own name (an accepted __main__ name is an alias)
        return TreeSpec(_NAMEDTUPLE, cls._fields, children, (), _NT_NAME_OF.get(cls, name), cls)
    entry = _BY_NAME.get(kind)
    if entry is None and not _KEEP_NAMES.get():
        raise ArchiveError(f"treespec: unknown type {kind!r}; register the dataclass with "
                           f"register_dataclass(cls, serialized_type_name={kind!r}) before loading")
    fields = data.get("fields")
    nones = data.get("none_fields", [])
    if not isinstance(fields, list) or len(fields) != len(children) or not isinstance(nones, list):
        raise ArchiveError(f"treespec {kind!r}: 'fields' must be a list as long as 'children'")
    if entry is None:  # kept as a name: the stored field names are all there is to check against
        if any(not isinstance(f, str) for f in list(fields) + list(nones)):
            raise ArchiveError(f"treespec {kind!r}: field names must be strings")
        return TreeSpec(kind, tuple(fields), children, tuple(nones))
    unknown = set(fields) | set(nones)
    unknown -= set(entry.fields)
    if unknown:
        raise ArchiveError(f"treespec {kind!r}: fields {sorted(unknown)} do not exist on {entry.cls.__name__}")
    return TreeSpec(entry.name, tuple(fields), children, tuple(nones))  # an accepted alias: the class's name
