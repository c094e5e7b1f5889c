"""Constraint markers for the spec dataclasses.

annotated_types (which pydantic depends on) carries constraints into the JSON Schema. Where it is
absent (a machine with kvcalc's source but without pydantic, such as a GPU image running
`kvcalc measure`), stand-ins keep the dataclasses importable; validation of user files then
needs pydantic installed.
"""

from __future__ import annotations

try:
    from annotated_types import Ge, Gt, MinLen
except ImportError:  # pragma: no cover - exercised only on machines without pydantic
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Gt:  # type: ignore[no-redef]
        gt: int

    @dataclass(frozen=True)
    class Ge:  # type: ignore[no-redef]
        ge: int

    @dataclass(frozen=True)
    class MinLen:  # type: ignore[no-redef]
        min_length: int


__all__ = ["Ge", "Gt", "MinLen"]
