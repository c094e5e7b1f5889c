"""Reading spec files: YAML and JSON, with errors that name the file, the line and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kvcalc.errors import KvcalcError

MAX_FILE_BYTES = 4 * 2**20


def read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise KvcalcError(f"file is {size:,} bytes", str(path), f"a spec or config of at most {MAX_FILE_BYTES:,} bytes")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise KvcalcError("file is not UTF-8 text", str(path), "a YAML or JSON text file") from None
    except IsADirectoryError:
        raise KvcalcError("is a folder without config.json", str(path), "a YAML spec, a config.json, or a folder holding one") from None
    except OSError as e:
        raise KvcalcError(f"cannot read file: {e.strerror or e}", str(path), "a readable YAML or JSON file") from None


def _yaml_loader():
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        """Safe loading without anchors/aliases: they buy nothing in a spec and enable YAML bombs."""

        def compose_node(self, parent, index):
            if self.check_event(yaml.events.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not accepted in spec files", event.start_mark
                )
            return super().compose_node(parent, index)

    # The C loader composes in C (no hook for aliases): use it only for texts that cannot hold one.
    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader), NoAliasLoader


def parse_yaml(text: str, where: str) -> Any:
    yaml, _fast, safe = _yaml_loader()
    try:
        if "*" in text or "&" in text:
            return yaml.load(text, Loader=safe)  # noqa: S506 (a SafeLoader subclass)
        return yaml.load(text, Loader=_fast)  # noqa: S506
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise KvcalcError(f"malformed YAML: {problem}", f"{where}{line}", "a YAML mapping of spec fields") from None
    except RecursionError:
        raise KvcalcError("YAML nested too deeply", where, "a spec of ordinary depth") from None


def parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise KvcalcError(f"malformed JSON: {e.msg}", f"{where}, line {e.lineno}", "a JSON object") from None
    except RecursionError:
        raise KvcalcError("JSON nested too deeply", where, "a config of ordinary depth") from None


def yaml_line(text: str, loc: tuple) -> int | None:
    """The 1-based line of the node at ``loc`` (a pydantic error location) in a YAML text."""
    try:
        import yaml

        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except Exception:  # noqa: BLE001 - best effort; the caller still names the field
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


def validation_error(e: ValidationError, where: str, text: str | None, what: str) -> KvcalcError:
    """The first pydantic error as one line: file, line, field, problem."""
    err = e.errors()[0]
    # Drop the discriminator tags pydantic inserts (e.g. 'full') from the location.
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p in ("full", "sliding", "chunked", "mla", "state", "none", "function-after[_check(), ModelSpec]")))
    field = ".".join(str(p) for p in loc) or "(top level)"
    missing = err["type"] == "missing"
    parent = loc[:-1] if missing else loc
    line = yaml_line(text, parent) if text and parent else None
    place = f"{where}, line {line}, field {field}" if line else f"{where}, field {field}"
    msg = err.get("msg", "invalid").replace("Value error, ", "")
    extra = f" (got {err['input']!r})" if err["type"] not in ("missing", "extra_forbidden") and not isinstance(err.get("input"), (dict, list)) else ""
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
    elif missing:
        msg = "missing field"
    more = len(e.errors()) - 1
    suffix = f"; {more} more problem{'s' if more > 1 else ''}" if more else ""
    return KvcalcError(f"invalid {what}: {msg}{extra}{suffix}", place, f"see 'kvcalc schema {what.split()[0]}'")


def to_yaml(doc: dict) -> str:
    """A spec dict as YAML: keys in their given order, short lists of names on one line."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def _list(dumper, data):
        flow = all(isinstance(x, (str, int, float)) for x in data) and (len(data) <= 16 or all(isinstance(x, int) for x in data))
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)

    Dumper.add_representer(list, _list)
    return yaml.dump(doc, Dumper=Dumper, sort_keys=False, width=100, allow_unicode=True)
