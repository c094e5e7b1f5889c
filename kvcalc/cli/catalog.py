"""kvcalc models / gpus / show / import / schema: the catalog and the spec formats."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit


def models(as_json: opt.Json = False) -> Any:
    """List the models in the catalog.

    Example: kvcalc models
    """
    from kvcalc.engine.catalog import models as summarise
    from kvcalc.specs.catalog import all_specs

    return emit(summarise(all_specs("model")), None, as_json)


def engines(as_json: opt.Json = False) -> Any:
    """List the serving engines and releases kvcalc models, rule by rule.

    Example: kvcalc engines
    """
    from kvcalc.engine.engines import engines_report

    return emit(engines_report(), None, as_json)


def gpus(as_json: opt.Json = False) -> Any:
    """List the GPUs and accelerators in the catalog.

    Example: kvcalc gpus
    """
    from kvcalc.engine.catalog import gpus as summarise
    from kvcalc.specs.catalog import all_specs

    return emit(summarise(all_specs("gpu")), None, as_json)


def show(
    name: Annotated[str, typer.Argument(metavar="NAME", help="A model or GPU: catalog name, alias or file.")],
    as_json: opt.Json = False,
) -> Any:
    """Show one model or GPU spec and its derived figures.

    Example: kvcalc show deepseek-v3
    """
    from kvcalc.engine.catalog import show_gpu, show_model
    from kvcalc.specs.catalog import resolve, spec_kind

    kind = spec_kind(name, "NAME")
    spec = resolve(kind, name, "NAME")
    return emit(show_gpu(spec) if kind == "gpu" else show_model(spec), None, as_json)


def import_(
    config: Annotated[str, typer.Argument(metavar="CONFIG", help="A Hugging Face config.json, or a folder holding one.")],
    name: Annotated[
        Optional[str], typer.Option("--name", metavar="<name>", help="Name for the spec (default: from the config or folder).")
    ] = None,
    url: Annotated[
        Optional[str], typer.Option("--url", metavar="<url>", help="Source to cite (default: the file's path).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the spec and the warnings as one JSON object.")] = False,
) -> Any:
    """Print the YAML model spec for a Hugging Face config.json (offline).

    Example: kvcalc import ./Qwen3-32B/config.json --name qwen3-32b > my-qwen.yaml
    """
    from kvcalc.specs.hf import import_config

    return emit(import_config(config, name, url), None, as_json)


def schema(kind: Annotated[str, typer.Argument(metavar="KIND", help="model or gpu")]) -> None:
    """Print the JSON Schema of a model or GPU spec, for editors to validate YAML files.

    Example: kvcalc schema model > model-spec.schema.json
    """
    from kvcalc.errors import KvcalcError
    from kvcalc.render.json import dumps
    from kvcalc.specs.loader import json_schema

    if kind not in ("model", "gpu"):
        raise KvcalcError(f"unknown schema {kind[:40]!r}", "KIND", "model or gpu")
    # A JSON Schema document as it is (no report fields): the one JSON writer prints it.
    sys.stdout.write(dumps(json_schema(kind)))
