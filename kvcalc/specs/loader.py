"""Reading spec files: YAML and JSON, with errors that name the file, the line and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kvcalc import files
from kvcalc.errors import KvcalcError


def read_text(path: str | Path) -> str:
    """A spec, config or check file: a regular UTF-8 file of at most 4 MiB."""
    return files.read_text(path, files.SPEC_LIMIT, "a YAML or JSON text file")


def parse_yaml(text: str, where: str) -> Any:
    """Safe YAML, loaded by libyaml's C parser where it is installed.

    Anchors and aliases are refused: they buy nothing in a spec or a check file and make YAML
    bombs. The C loader resolves aliases without a hook, so when the text could hold one (a
    ``*``), its event stream is scanned first, also in C; texts without one load directly.
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        if "*" in text:
            for event in yaml.parse(text, Loader=loader):
                if isinstance(event, yaml.AliasEvent):
                    mark = event.start_mark
                    line = f", line {mark.line + 1}" if mark is not None else ""
                    raise KvcalcError(
                        "malformed YAML: aliases (*name) are not accepted",
                        f"{where}{line}",
                        "a YAML mapping without anchors and aliases",
                    )
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise KvcalcError(f"malformed YAML: {problem}", f"{where}{line}", "a YAML mapping of spec fields") from None
    except RecursionError:
        raise KvcalcError("YAML nested too deeply", where, "a spec of ordinary depth") from None
    except ValueError as e:
        # Python refuses to read integers of more than 4,300 digits (sys.get_int_max_str_digits).
        if "digits" in str(e):
            raise KvcalcError("a number with thousands of digits", where, "figures of ordinary size (at most 2^50)") from None
        raise


def parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise KvcalcError(f"malformed JSON: {e.msg}", f"{where}, line {e.lineno}", "a JSON object") from None
    except RecursionError:
        raise KvcalcError("JSON nested too deeply", where, "a config of ordinary depth") from None
    except ValueError as e:
        if "digits" in str(e):
            raise KvcalcError("a number with thousands of digits", where, "figures of ordinary size (at most 2^50)") from None
        raise


def yaml_line(text: str, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the node at ``loc`` (a pydantic error location) in a YAML text."""
    try:
        import yaml

        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except Exception:
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if node is None:
            break
        nxt = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if str(k.value) == str(part):
                    nxt = v
                    line = k.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            nxt = node.value[part]
            line = nxt.start_mark.line + 1
        if nxt is None:
            break
        node = nxt
    return line


def _class_names() -> set[str]:
    """Names pydantic puts in error locations for union branches, which users never typed."""
    from kvcalc.specs.layers import KIND_CLASSES

    return {c.__name__ for c in KIND_CLASSES.values()} | {
        "MoE",
        "Source",
        "LayerGroup",
        "GPUSource",
        "NodeSpec",
        "AllReduceSpec",
        "GemmSpec",
        "AttentionSpec",
        "MlaSpec",
        "MoeSpec",
    }


def _errors(e: Any) -> list[dict[str, Any]]:
    """pydantic errors, with union branches whose ``kind`` tag did not match dropped."""
    errs: list[dict[str, Any]] = e.errors()
    wrong = {tuple(x["loc"][:-1]) for x in errs if x["type"] == "literal_error" and x["loc"][-1:] == ("kind",)}
    kept = [x for x in errs if not any(tuple(x["loc"][: len(w)]) == w for w in wrong)]
    return kept or errs


def validation_error(e: Any, where: str, text: str | None, what: str) -> KvcalcError:
    """The first pydantic error as one line: file, line, field, problem."""
    errs = _errors(e)
    err = errs[0]
    names = _class_names()
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and (p in names or p.startswith("function-"))))
    field = ".".join(str(p) for p in loc) or "(top level)"
    missing = err["type"] == "missing"
    parent = loc[:-1] if missing else loc
    line = yaml_line(text, parent) if text and parent else None
    place = f"{where}, line {line}, field {field}" if line else f"{where}, field {field}"
    msg = err.get("msg", "invalid").replace("Value error, ", "")
    inp = err.get("input")
    extra = (
        f" (got {inp!r})"
        if err["type"] not in ("missing", "unexpected_keyword_argument", "extra_forbidden", "value_error")
        and not isinstance(inp, (dict, list))
        and len(repr(inp)) < 80
        else ""
    )
    if err["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        msg = "unknown field"
    elif missing:
        msg = "missing field"
    more = len(errs) - 1
    suffix = f"; {more} more problem{'s' if more > 1 else ''}" if more else ""
    return KvcalcError(f"invalid {what}: {msg}{extra}{suffix}", place, f"see 'kvcalc schema {what.split()[0]}'")


def _spec_class(kind: str) -> Any:
    if kind == "model":
        from kvcalc.specs.model import ModelSpec

        return ModelSpec
    from kvcalc.specs.gpu import GPUSpec

    return GPUSpec


def validate(kind: str, doc: dict[str, Any], where: str, text: str | None, trusted: bool = False) -> Any:
    """A spec dict -> ModelSpec or GPUSpec.

    ``trusted`` (the catalog, tested against pydantic in the test suite) builds the dataclasses
    directly; anything else is validated by pydantic, with errors naming file, line and field.
    """
    cls = _spec_class(kind)
    if trusted:
        try:
            return cls.from_dict(doc)
        except (TypeError, ValueError, KeyError) as e:
            raise KvcalcError(f"invalid {kind} spec: {e}", where, f"see 'kvcalc schema {kind}'") from None
    from pydantic import ValidationError

    adapter = _adapter(cls)  # binds the constraint names the type walk below resolves
    loc = _boolean_number(cls, doc, ())
    if loc is not None:
        line = yaml_line(text, loc) if text else None
        field = ".".join(str(p) for p in loc)
        place = f"{where}, line {line}, field {field}" if line else f"{where}, field {field}"
        raise KvcalcError(f"invalid {kind} spec: a boolean where a number belongs", place, f"see 'kvcalc schema {kind}'")
    try:
        return adapter.validate_python(doc)
    except ValidationError as e:
        raise validation_error(e, where, text, f"{kind} spec") from None
    except RecursionError:
        raise KvcalcError("spec nested too deeply", where, f"a {kind} spec") from None


def _boolean_number(tp: Any, value: Any, loc: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The location of the first boolean given for a numeric field, or None.

    pydantic's lax mode reads YAML's ``true`` as 1 for an int or float field, so ``latency_us: true``
    would load as 1 us; its strict mode would refuse the nested dicts every spec is made of. So the
    document is walked against the dataclasses' types first, and a boolean is refused wherever the
    field does not itself take one.
    """
    import dataclasses
    import types
    import typing

    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _boolean_number(args[0], value, loc)
    if origin in (typing.Union, types.UnionType):
        if isinstance(value, bool):
            # Optional constrained numbers (Pos | None) are Annotated[int, ...] inside the union.
            base = [typing.get_args(a)[0] if typing.get_origin(a) is typing.Annotated else a for a in args]
            return None if bool in base or not any(a in (int, float) for a in base) else loc
        kinds = [a for a in args if dataclasses.is_dataclass(a)]
        if isinstance(value, dict) and len(kinds) > 1:  # layer kinds, told apart by their tag
            kinds = [a for a in kinds if getattr(a, "KIND", None) == value.get("kind")]
        rest = [a for a in args if a is not type(None)]
        pick = kinds[0] if len(kinds) == 1 else rest[0] if len(rest) == 1 else None
        return None if pick is None else _boolean_number(pick, value, loc)
    if tp in (int, float):
        return loc if isinstance(value, bool) else None
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        try:
            hints = typing.get_type_hints(tp, include_extras=True)
        except (NameError, TypeError):
            return None
        for f in dataclasses.fields(tp):
            if f.name in value and f.name in hints:
                found = _boolean_number(hints[f.name], value[f.name], (*loc, f.name))
                if found is not None:
                    return found
        return None
    if origin is list and args and isinstance(value, list):
        for i, item in enumerate(value):
            found = _boolean_number(args[0], item, (*loc, i))
            if found is not None:
                return found
    if origin is dict and len(args) == 2 and isinstance(value, dict):
        for k, item in value.items():
            found = _boolean_number(args[1], item, (*loc, k))
            if found is not None:
                return found
    return None


_ADAPTERS: dict[Any, Any] = {}


def _adapter(cls: Any) -> Any:
    from pydantic import TypeAdapter

    from kvcalc.specs.constraints import install

    install()
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = TypeAdapter(cls)
    return _ADAPTERS[cls]


def json_schema(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = _adapter(_spec_class(kind)).json_schema()
    return schema


def to_yaml(doc: dict[str, Any]) -> str:
    """A spec dict as YAML: keys in their given order, short lists of names on one line."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def _list(dumper: Any, data: list[Any]) -> Any:
        flow = all(isinstance(x, (str, int, float)) for x in data) and (len(data) <= 16 or all(isinstance(x, int) for x in data))
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)

    Dumper.add_representer(list, _list)
    return yaml.dump(doc, Dumper=Dumper, sort_keys=False, width=100, allow_unicode=True)


probe = files.probe
