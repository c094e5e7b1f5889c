"""kvcalc models / gpus / show / import / schema: the catalog and the spec formats."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from kvcalc.cli.app import app


@app.command()
def models(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """List the models in the catalog.

    Example: kvcalc models
    """
    from kvcalc.specs.catalog import all_specs

    specs = all_specs("model")
    if as_json:
        from kvcalc.engine.kv import kv_size
        from kvcalc.render import emit_json

        emit_json({"models": [
            {"name": m.name, "aliases": m.aliases, "params_total": m.params_total, "params_active": m.params_active,
             "num_layers": m.num_layers, "layer_counts": {m.layer_kinds[k].kind + ":" + k: n for k, n in m.layer_counts().items()},
             "kv_bytes_per_token_bf16": kv_size(m, 1).kv_bytes_per_token,
             "max_position_embeddings": m.max_position_embeddings, "source": m.source.url}
            for m in specs]})
        return
    from kvcalc.render import render_models

    render_models(specs)


@app.command()
def gpus(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """List the GPUs and accelerators in the catalog.

    Example: kvcalc gpus
    """
    from kvcalc.specs.catalog import all_specs

    specs = all_specs("gpu")
    if as_json:
        from kvcalc.render import emit_json, to_plain

        emit_json({"gpus": [to_plain(g) for g in specs]})
        return
    from kvcalc.render import render_gpus

    render_gpus(specs)


@app.command()
def show(
    name: str = typer.Argument(..., help="A model or GPU: catalog name, alias or file."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Show one model or GPU spec and its derived figures.

    Example: kvcalc show deepseek-v3
    """
    from kvcalc.errors import KvcalcError
    from kvcalc.specs.catalog import canonical_name, resolve, suggest

    kind = None
    if canonical_name("model", name):
        kind = "model"
    elif canonical_name("gpu", name):
        kind = "gpu"
    else:
        from pathlib import Path

        from kvcalc.specs.loader import probe

        p = Path(name)
        if probe(p):
            kind = "gpu" if p.suffix in (".yaml", ".yml") and "memory_bandwidth_bytes_per_s" in p.read_text(errors="replace") else "model"
        else:
            near = suggest("model", name) + suggest("gpu", name)
            accepted = ("did you mean " + ", ".join(near[:4]) + "?") if near else "see 'kvcalc models' and 'kvcalc gpus'"
            raise KvcalcError(f"unknown model or GPU {name!r}", "NAME", accepted)
    spec = resolve(kind, name, "NAME")
    if kind == "gpu":
        if as_json:
            from kvcalc.render import emit_json, to_plain

            emit_json({"kind": "gpu", "spec": to_plain(spec)})
            return
        from kvcalc.render import render_show_gpu

        render_show_gpu(spec)
        return
    from kvcalc.engine.dtypes import kv_dtype
    from kvcalc.engine.kv import kv_size
    from kvcalc.engine.memory import model_weight_bytes

    bf16 = kv_dtype("bf16")
    derived = {
        "params_total": spec.params_total,
        "params_active": spec.params_active,
        "weight_dtype": spec.weight_dtype + (f" (experts {spec.moe.expert_weight_dtype})" if spec.moe and spec.moe.expert_weight_dtype else ""),
        "weight_bytes": model_weight_bytes(spec),
        "num_layers": spec.num_layers,
        "per_kind_bytes_per_token": {k: v.kv_bytes_per_token(bf16) for k, v in spec.layer_kinds.items()},
        "kv_bytes_per_token": kv_size(spec, 1).kv_bytes_per_token,
        "kv_bytes_at_max_context": kv_size(spec, spec.max_position_embeddings).kv_bytes_per_request,
    }
    if as_json:
        from kvcalc.render import emit_json, to_plain

        emit_json({"kind": "model", "spec": to_plain(spec), "derived": derived})
        return
    from kvcalc.render import render_show_model

    render_show_model(spec, derived)


@app.command("import")
def import_(
    config: str = typer.Argument(..., help="A Hugging Face config.json, or a folder holding one."),
    name: Optional[str] = typer.Option(None, "--name", help="Name for the spec (default: from the config or folder)."),
    url: Optional[str] = typer.Option(None, "--url", help="Source to cite (default: the file's path)."),
    as_json: bool = typer.Option(False, "--json", help="Print the spec and the warnings as one JSON object."),
) -> None:
    """Print the YAML model spec for a Hugging Face config.json (offline).

    Example: kvcalc import ./Qwen3-32B/config.json --name qwen3-32b > my-qwen.yaml
    """
    from pathlib import Path

    from kvcalc.errors import KvcalcError
    from kvcalc.specs.hf import spec_dict_from_config
    from kvcalc.specs.loader import parse_json, read_text, to_yaml, validate

    from kvcalc.specs.loader import probe

    p = Path(config)
    if probe(p) == "dir":
        p = p / "config.json"
    if probe(p) != "file":
        raise KvcalcError("no such file", config, "a config.json or a folder holding one")
    doc = parse_json(read_text(p), str(p))
    default_name = (p.parent.name if p.name == "config.json" and p.parent.name else p.stem).lower()
    spec, warnings = spec_dict_from_config(doc, url or str(p), name=name or default_name)
    validate("model", spec, str(p), None)
    if as_json:
        from kvcalc.render import emit_json

        emit_json({"spec": spec, "warnings": warnings})
        return
    for w in warnings:
        sys.stderr.write(f"kvcalc: warning: {w}\n")
    sys.stdout.write(f"# Imported by kvcalc from {url or p}\n" + to_yaml(spec))


@app.command()
def schema(kind: str = typer.Argument(..., help="model or gpu")) -> None:
    """Print the JSON Schema of a model or GPU spec, for editors to validate YAML files.

    Example: kvcalc schema model > model-spec.schema.json
    """
    import json

    from kvcalc.errors import KvcalcError

    if kind not in ("model", "gpu"):
        raise KvcalcError(f"unknown schema {kind!r}", "KIND", "model or gpu")
    from kvcalc.specs.loader import json_schema

    sys.stdout.write(json.dumps(json_schema(kind), indent=2) + "\n")
