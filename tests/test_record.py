"""kvcalc._record.record against dataclasses.dataclass: the same class declared with each must behave
the same to a caller, for every kind of declaration kvcalc makes (frozen or not, keyword-only or
positional, defaults, default factories, init=False fields, __post_init__, eq=False, an explicit
__hash__, inheritance)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import field
from typing import Any

import pytest

from kvcalc._record import _record as record


def both(frozen: bool = False, kw_only: bool = False, eq: bool = True) -> tuple[type, type]:
    """The same class body under each decorator."""

    def body(deco: Any, name: str) -> type:
        ns: dict[str, Any] = {
            "__annotations__": {"a": "int", "b": "str", "c": "list[int]", "d": "int", "e": "int"},
            "__module__": __name__,
            "__qualname__": name,
            "b": "x",
            "c": field(default_factory=lambda: [1]),
            "d": field(default=4, repr=False, compare=False),
            "e": field(default=0, init=False),
        }
        cls = type(name, (), ns)
        return deco(frozen=frozen, kw_only=kw_only, eq=eq)(cls)

    return body(dataclasses.dataclass, "Spec"), body(record, "Spec")


SHAPES = [dict(frozen=f, kw_only=k, eq=e) for f in (False, True) for k in (False, True) for e in (True, False)]


def outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except Exception as e:  # the type is what is compared
        return (type(e).__name__, str(e).replace("Spec.__init__()", "__init__()"))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_construction_repr_and_equality_match_dataclasses(shape):
    D, R = both(**shape)
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {"a": 1}),
        ((), {"a": 1, "b": "y", "c": [2], "d": 5}),
        ((1,), {}),
        ((1, "y"), {}),
        ((), {}),
        ((1,), {"a": 2}),
        ((), {"a": 1, "e": 3}),
        ((), {"a": 1, "zz": 3}),
        ((1, "y", [3], 4, 5), {}),
    ]
    for args, kw in calls:
        d, r = outcome(lambda a=args, k=kw: D(*a, **k)), outcome(lambda a=args, k=kw: R(*a, **k))
        assert d[0] == r[0], (args, kw, d, r)
        if d[0] != "ok":
            continue
        x, y = d[1], r[1]
        assert repr(x) == repr(y)
        assert dataclasses.asdict(x) == dataclasses.asdict(y)
        assert [f.name for f in dataclasses.fields(x)] == [f.name for f in dataclasses.fields(y)]
        # Equality within each kind, and never across them (another class).
        assert (x == D(*args, **kw)) == (y == R(*args, **kw))
        assert (x == copy.copy(x)) == (y == copy.copy(y))
        assert y != x
        # Hashable exactly when the dataclass is, with equal objects hashing alike.
        hd, hr = outcome(lambda x=x: hash(x)), outcome(lambda y=y: hash(y))
        assert hd[0] == hr[0]
        if hd[0] == "ok" and shape["eq"]:
            assert hash(y) == hash(R(*args, **kw))
        # Frozen: assigning or deleting a field fails the same way.
        assert outcome(lambda x=x: setattr(x, "a", 9))[0] == outcome(lambda y=y: setattr(y, "a", 9))[0]
        assert outcome(lambda x=x: delattr(x, "b"))[0] == outcome(lambda y=y: delattr(y, "b"))[0]
        # replace, pickle and deepcopy round-trip.
        assert repr(dataclasses.replace(x, a=7)) == repr(dataclasses.replace(y, a=7))
        globals()["Spec"] = R  # (pickle finds a class by its module and name)
        y2 = pickle.loads(pickle.dumps(y))
        assert repr(y2) == repr(y) and repr(copy.deepcopy(y)) == repr(y)


def test_default_factories_give_each_object_its_own():
    _, R = both()
    a, b = R(a=1), R(a=1)
    a.c.append(5)
    assert b.c == [1]


def test_post_init_runs_after_the_fields_are_set():
    seen = []

    @record(frozen=True, kw_only=True)
    class P:
        x: int
        y: int = 2

        def __post_init__(self) -> None:
            seen.append((self.x, self.y))
            if self.x < 0:
                raise ValueError("x must be at least 0")

    P(x=1)
    assert seen == [(1, 2)]
    with pytest.raises(ValueError, match="at least 0"):
        P(x=-1)


def test_subclasses_add_fields_after_their_bases_and_an_explicit_hash_is_kept():
    @record(frozen=True, kw_only=True)
    class Base:
        n: int

        def __hash__(self) -> int:
            return 42

    @record(frozen=True, kw_only=True)
    class Kind(Base):
        w: int = 3

    k = Kind(n=1)
    assert [f.name for f in dataclasses.fields(k)] == ["n", "w"]
    assert repr(k) == "test_subclasses_add_fields_after_their_bases_and_an_explicit_hash_is_kept.<locals>.Kind(n=1, w=3)"
    assert hash(Base(n=1)) == 42
    # A stdlib frozen dataclass may still derive from a record class (tests/test_layer_kinds.py does).
    sub = dataclasses.dataclass(frozen=True, kw_only=True)(type("Sub", (Kind,), {"__annotations__": {"z": "int"}, "z": 0}))
    assert dataclasses.asdict(sub(n=1)) == {"n": 1, "w": 3, "z": 0}
    with pytest.raises(dataclasses.FrozenInstanceError):
        k.n = 2  # type: ignore[misc]


def test_the_specs_and_reports_on_the_start_up_path_are_records():
    # What the start-up figure in docs/benchmarks.md counts on: these modules' classes avoid the exec.
    from kvcalc.engine.kv import KVFootprint
    from kvcalc.specs.layers import FullAttention
    from kvcalc.specs.model import ModelSpec

    for cls in (KVFootprint, FullAttention, ModelSpec):
        assert "__record_table__" in cls.__dict__, cls


def test_an_objects_attributes_are_in_the_fields_order_whatever_the_call():
    @record(kw_only=True)
    class K:
        a: int
        b: int = 2
        c: list[int] = field(default_factory=list)
        d: int

    assert list(vars(K(d=4, a=1)).keys()) == ["a", "b", "c", "d"]
    assert list(
        vars(
            dataclasses.dataclass(kw_only=True)(
                type("K2", (), {"__annotations__": K.__annotations__, "b": 2, "c": field(default_factory=list)})
            )(d=4, a=1)
        ).keys()
    ) == ["a", "b", "c", "d"]


def test_frozen_and_unfrozen_classes_mix_as_dataclasses_allows():
    # record makes a frozen class's __setattr__ without dataclasses' frozen=True; the rules between
    # frozen and unfrozen bases must still be dataclasses' (a TypeError either way round), and a
    # subclass's own non-field attribute of a frozen base behaves as with dataclasses.
    for deco in (dataclasses.dataclass, record):

        @deco(frozen=True)
        class F:
            a: int = 1

        @deco
        class U:
            a: int = 1

        with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):
            deco(type("X", (F,), {"__annotations__": {"b": "int"}, "b": 2}))
        with pytest.raises(TypeError, match="cannot inherit frozen dataclass from a non-frozen one"):
            deco(frozen=True)(type("Y", (U,), {"__annotations__": {"b": "int"}, "b": 2}))
        G = deco(frozen=True)(type("G", (F,), {"__annotations__": {"b": "int"}, "b": 2}))
        g = G()
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'a'"):
            g.a = 3
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'b'"):
            del g.b
        with pytest.raises(dataclasses.FrozenInstanceError):
            g.other = 1  # not a field, but G is the instance's own class
        assert dataclasses.fields(G)[1].name == "b" and G.__dataclass_params__.frozen
