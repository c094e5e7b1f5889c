"""Field constraints of the spec dataclasses, for pydantic and the JSON Schema.

The dataclasses annotate their fields with the names below (``Pos``, ``Text``, ...). Those
annotations are strings until something evaluates them, and only pydantic does (when it validates
a user's file or writes the schema). So the names are bound to their ``Annotated`` constraints
here, just before pydantic runs, and a command that reads only catalog specs never imports
annotated_types or pydantic. The dataclasses check the same bounds themselves in ``__post_init__``.
"""

from __future__ import annotations

MAX_FIELD = 2**50
"""The largest integer a spec field may hold (about 10^15): larger is a typo, and would only make
figures that overflow float arithmetic downstream."""

_installed = False


def install() -> None:
    """Bind the constraint names in the spec modules (idempotent)."""
    global _installed
    if _installed:
        return
    from typing import Annotated

    from annotated_types import Ge, Gt, Le, MinLen

    from kvcalc.specs import gpu, layers, model

    names = {
        "Pos": Annotated[int, Gt(0), Le(MAX_FIELD)],
        "NonNeg": Annotated[int, Ge(0), Le(MAX_FIELD)],
        "Text": Annotated[str, MinLen(1)],
        "Names": Annotated[list[str], MinLen(1)],
        "KindMap": Annotated[dict[str, layers.LayerKind], MinLen(1)],
        "Groups": Annotated[list[model.LayerGroup], MinLen(1)],
    }
    for mod in (layers, model, gpu):
        vars(mod).update(names)
    _installed = True
