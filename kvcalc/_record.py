"""``record``: :func:`dataclasses.dataclass`, cheaper to apply at import.

dataclasses writes each class's ``__init__``, ``__repr__``, ``__eq__`` and ``__hash__`` (and, frozen,
``__setattr__``/``__delattr__``) as source text and ``exec``\\ s it: about 1 ms a frozen class on
this machine, two dozen classes on the way to ``kvcalc size``'s answer, a fifth of its start-up
beyond typer's. ``record`` lets dataclasses find the fields (``init=False, repr=False, eq=False,
frozen=False``) and gives the class generic methods that read a table of its fields built once; a
frozen class's ``__setattr__`` and ``__delattr__`` are closures doing what dataclasses' would. What a caller sees is what dataclasses gives (the fields, ``dataclasses.fields``,
``replace`` and ``asdict``, the same ``__init__`` arguments and error types, repr, equality,
hashing and frozenness; tests/test_record.py compares the two on every kind of class kvcalc declares), and
type checkers see ``dataclasses.dataclass`` itself.

Only what kvcalc's classes use is supported: ``frozen``, ``kw_only`` and ``eq``; fields with
defaults, default factories and ``init=False``; ``__post_init__`` without init-only variables.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

T = TypeVar("T")
_MISSING: Any = dataclasses.MISSING


class _Table:
    """What __init__ needs of a class's fields, worked out once."""

    __slots__ = ("positional", "accepted", "required", "defaults", "factories", "order", "post", "name")

    def __init__(self, cls: type):
        fs = dataclasses.fields(cls)
        self.positional = tuple(f.name for f in fs if f.init and not f.kw_only)
        self.accepted = frozenset(f.name for f in fs if f.init)
        self.required = frozenset(f.name for f in fs if f.init and f.default is _MISSING and f.default_factory is _MISSING)
        # Plain defaults of the init fields (an init=False field with a plain default is the class's
        # attribute, as dataclasses leaves it), and every field's default factory.
        self.defaults = {f.name: f.default for f in fs if f.init and f.default is not _MISSING}
        made: Any = tuple((f.name, f.default_factory) for f in fs if f.default_factory is not _MISSING)
        self.factories: tuple[tuple[str, Callable[[], Any]], ...] = made
        self.order = tuple(f.name for f in fs if f.init or f.default_factory is not _MISSING)
        """The fields __init__ sets, in the order dataclasses' __init__ sets them."""
        self.post = hasattr(cls, "__post_init__")
        self.name = cls.__qualname__


def _init(self: Any, *args: Any, **kw: Any) -> None:
    t: _Table = type(self).__record_table__
    if args:
        kw = _positional(t, args, kw)
    elif not t.accepted.issuperset(kw):
        raise TypeError(f"{t.name}.__init__() got an unexpected keyword argument {min(kw.keys() - t.accepted)!r}")
    if not t.required.issubset(kw):
        raise TypeError(f"{t.name}.__init__() missing required argument: {min(t.required - kw.keys())!r}")
    values = t.defaults.copy()
    values.update(kw)
    for f, factory in t.factories:
        if f not in kw:
            values[f] = factory()
    # Straight into the instance's __dict__ (what a frozen class's object.__setattr__ would do), in the
    # fields' order.
    self.__dict__.update({f: values[f] for f in t.order})
    if t.post:
        self.__post_init__()


def _positional(t: _Table, args: tuple[Any, ...], kw: dict[str, Any]) -> dict[str, Any]:
    if len(args) > len(t.positional):
        raise TypeError(f"{t.name}.__init__() takes {len(t.positional) + 1} positional arguments but {len(args) + 1} were given")
    given = dict(zip(t.positional, args))
    if kw:
        for k in kw:
            if k in given:
                raise TypeError(f"{t.name}.__init__() got multiple values for argument {k!r}")
            if k not in t.accepted:
                raise TypeError(f"{t.name}.__init__() got an unexpected keyword argument {k!r}")
        given.update(kw)
    return given


def _repr(self: Any) -> str:
    names = type(self).__record_repr__
    return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = type(self).__record_compare__
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in type(self).__record_hash__))


def _freeze(cls: Any, names: frozenset[str]) -> None:
    """What dataclasses' frozen=True gives a class: assigning or deleting a field, or any attribute of
    an instance of this very class, raises FrozenInstanceError; a subclass's own attributes pass to
    the next class in its MRO (dataclasses' ``_frozen_get_del_attr``, the same test and messages)."""
    if "__setattr__" in cls.__dict__ or "__delattr__" in cls.__dict__:
        raise TypeError(f"Cannot overwrite attribute __setattr__ or __delattr__ in class {cls.__name__}")

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    for f in (__setattr__, __delattr__):
        f.__qualname__ = f"{cls.__qualname__}.{f.__name__}"
    cls.__setattr__, cls.__delattr__ = __setattr__, __delattr__


def _apply(cls: type[T], frozen: bool, kw_only: bool, eq: bool) -> type[T]:
    own = cls.__dict__
    # As dataclasses decides: a class body's own __hash__ stays, unless it is the None that
    # defining __eq__ sets.
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    if not cls.__doc__:
        # dataclasses writes a missing docstring from inspect.signature(cls), a few ms a class: the
        # same text, from the annotations.
        fields = ", ".join(f"{k}: {v}" for k, v in cls.__dict__.get("__annotations__", {}).items())
        cls.__doc__ = f"{cls.__name__}({fields})"
    # A frozen class's __setattr__ and __delattr__ are closures here, not exec'd source (dataclasses'
    # frozen=True writes them as text: 0.2 ms a class, most of what a frozen class costs). dataclasses
    # is told the class is not frozen, and then that it is: its checks between frozen and unfrozen
    # bases see every record base as unfrozen while a record subclass is made, and frozen after.
    above: list[Any] = [b for b in cls.__mro__[-1:0:-1] if "__dataclass_fields__" in b.__dict__]
    if above and any(b.__dataclass_params__.frozen for b in above) != frozen:  # dataclasses' own rule and words
        raise TypeError(
            f"cannot inherit {'frozen' if frozen else 'non-frozen'} dataclass from a {'non-frozen' if frozen else 'frozen'} one"
        )
    bases = [b.__dataclass_params__ for b in above if "__record_table__" in b.__dict__ and b.__dataclass_params__.frozen]
    for params in bases:
        params.frozen = False
    try:
        dataclasses.dataclass(init=False, repr=False, eq=False, frozen=False, kw_only=kw_only)(cls)
    finally:
        for params in bases:
            params.frozen = True
    c: Any = cls
    fs = dataclasses.fields(c)
    if frozen:
        c.__dataclass_params__.frozen = True
        _freeze(c, frozenset(f.name for f in fs))
    c.__record_table__ = _Table(c)
    c.__record_repr__ = tuple(f.name for f in fs if f.repr)
    c.__record_compare__ = tuple(f.name for f in fs if f.compare)
    c.__record_hash__ = tuple(f.name for f in fs if (f.compare if f.hash is None else f.hash))
    if "__init__" not in own:
        c.__init__ = _init
    if "__repr__" not in own:
        c.__repr__ = _repr
    if eq and "__eq__" not in own:
        c.__eq__ = _eq
    if eq and not explicit_hash:
        c.__hash__ = _hash if frozen else None
    return cls


def _record(cls: type[T] | None = None, /, *, frozen: bool = False, kw_only: bool = False, eq: bool = True) -> Any:
    if cls is None:
        return lambda c: _apply(c, frozen, kw_only, eq)
    return _apply(cls, frozen, kw_only, eq)


__all__ = ["record"]

if TYPE_CHECKING:
    from dataclasses import dataclass as record
else:
    record: Callable[..., Any] = _record
