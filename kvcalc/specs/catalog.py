"""The catalog: resolve what people type (a name, an alias, a file) into a spec.

A catalog name is a file's stem in model_specs/ or gpu_specs/, so the common case (an exact
name) reads one file. Aliases and loose spellings (``llama-2-7b``, ``meta-llama/Llama-2-7b-hf``,
``H100``) need every file's aliases, read once and cached.
"""

from __future__ import annotations

import json
import re
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kvcalc.errors import KvcalcError
from kvcalc.specs.loader import parse_json, parse_yaml, probe, read_text, validate

if TYPE_CHECKING:
    from kvcalc.specs.gpu import GPUSpec
    from kvcalc.specs.model import ModelSpec

Kind = Literal["model", "gpu"]
_PKG = Path(__file__).resolve().parent.parent


def spec_dir(kind: Kind) -> Path:
    """The folder holding the catalog's YAML files: inside the installed package, else the source tree."""
    sub = "model_specs" if kind == "model" else "gpu_specs"
    for cand in (_PKG / sub, _PKG.parent / sub):
        if cand.is_dir():
            return cand
    raise KvcalcError(f"the {kind} catalog is missing", str(_PKG / sub), "a kvcalc installation with its spec files")


@cache
def catalog_files(kind: Kind) -> dict[str, Path]:
    return {p.stem: p for p in sorted(spec_dir(kind).glob("*.yaml"))}


def _squash(name: str) -> str:
    """Loose key: lowercase letters and digits only ('Llama-2-7B' -> 'llama27b')."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


INDEX = Path(__file__).resolve().parent / "catalog.json"


@cache
def _index() -> dict[str, Any]:
    """Every catalog YAML file, parsed, in one JSON file: reading it costs a few milliseconds where
    importing a YAML parser costs forty. Rebuilt by ``python -m kvcalc.specs.catalog``; a test fails
    when it no longer matches the YAML files."""
    try:
        doc: dict[str, Any] = json.loads(INDEX.read_text(encoding="utf-8"))
        return doc
    except (OSError, ValueError):
        return build_index()


def build_index() -> dict[str, Any]:
    return {
        kind: {name: parse_yaml(read_text(path), str(path)) for name, path in catalog_files(kind).items()}
        for kind in ("model", "gpu")
    }


def catalog_doc(kind: Kind, name: str) -> dict[str, Any]:
    docs = _index()[kind]
    doc: dict[str, Any] = docs[name] if name in docs else build_index()[kind][name]
    return doc


@cache
def alias_index(kind: Kind) -> dict[str, str]:
    """Lowercased alias (and squashed spelling) -> canonical name."""
    idx: dict[str, str] = {}
    docs = _index()[kind]
    for name in catalog_files(kind):
        doc = docs.get(name) or {}
        keys = [name] + [str(a) for a in doc.get("aliases") or []]
        for k in keys:
            k = k.strip()
            idx.setdefault(k.lower(), name)
            if "/" in k:  # a Hugging Face repo id: also accept it without the organisation
                idx.setdefault(k.split("/", 1)[1].lower(), name)
        for k in keys:
            idx.setdefault(_squash(k), name)
            if "/" in k:
                idx.setdefault(_squash(k.split("/", 1)[1]), name)
    return idx


def canonical_name(kind: Kind, ref: str) -> str | None:
    files = catalog_files(kind)
    low = ref.strip().lower()
    if low in files:
        return low
    idx = alias_index(kind)
    return idx.get(low) or idx.get(_squash(low))


def load_spec_file(kind: Kind, path: Path, trusted: bool = False) -> Any:
    """A YAML (or JSON) spec file, or for models a Hugging Face config.json or a folder holding one."""
    if probe(path) == "dir":
        cfg = path / "config.json"
        if kind == "model" and probe(cfg) == "file":
            path = cfg
        else:
            want = "a folder holding config.json" if kind == "model" else "a GPU spec YAML file"
            raise KvcalcError("folder has no config.json", str(path), want)
    text: str | None = read_text(path)
    where = str(path)
    doc = parse_json(text or "", where) if path.suffix == ".json" else parse_yaml(text or "", where)
    if doc is None:
        raise KvcalcError("file is empty", where, f"a {kind} spec")
    if not isinstance(doc, dict):
        raise KvcalcError(f"top level is a {type(doc).__name__}", where, f"a mapping of {kind} spec fields")
    if kind == "model" and "layer_kinds" not in doc and "model_type" in doc:
        from kvcalc.specs.checkpoint import attach_checkpoint
        from kvcalc.specs.hf import spec_dict_from_config

        doc, warnings = spec_dict_from_config(doc, where, name=_config_name(path))
        warnings += attach_checkpoint(doc, path.parent)
        spec = validate(kind, doc, where, None, trusted=trusted)
        spec.import_warnings = [f"{path.name}: {w}" for w in warnings]
        return spec
    spec = validate(kind, doc, where, text, trusted=trusted)
    if kind == "model" and spec.source.assumed:
        spec.import_warnings = [f"{path.name}: {w}" for w in spec.source.assumed]
    return spec


@lru_cache(maxsize=64)
def _load_catalog(kind: Kind, name: str) -> Any:
    return validate(kind, catalog_doc(kind, name), str(catalog_files(kind)[name]), None, trusted=True)


def resolve(kind: Kind, ref: str, where: str | None = None, files_allowed: bool = True) -> Any:
    """A catalog name, an alias, or (when ``files_allowed``) a path -> spec."""
    where = where or kind
    if not isinstance(ref, str) or not ref.strip():
        raise KvcalcError(f"empty {kind} name", where, f"a catalog name (see 'kvcalc {kind}s') or a file")
    name = canonical_name(kind, ref)
    if name:
        return _load_catalog(kind, name)
    p = Path(ref).expanduser()
    if files_allowed and probe(p):
        return load_spec_file(kind, p)
    if files_allowed and (ref.endswith((".yaml", ".yml", ".json")) or "/" in ref and not ref.count("/") == 1):
        raise KvcalcError(
            "no such file", ref, f"a {kind} name, or the path of a YAML spec" + (" or config.json" if kind == "model" else "")
        )
    near = suggest(kind, ref)
    if kind == "model" and ref.count("/") == 1 and not ref.startswith((".", "/", "~")):
        cached = hf_cached_config(ref)
        if cached is not None and files_allowed:
            return load_spec_file(kind, cached)
        # A Hugging Face id kvcalc does not know: it works offline, so it needs the config.json.
        accepted = (
            f"kvcalc works offline: download its config.json (huggingface-cli download {ref[:80]} config.json "
            "--local-dir DIR) and give DIR/config.json as the model"
            + ("; or did you mean " + ", ".join(near) + "?" if near else "")
        )
        raise KvcalcError(f"{ref[:80]!r} is not in kvcalc's catalog", where, accepted)
    accepted = ("did you mean " + ", ".join(near) + "?") if near else f"see 'kvcalc {kind}s' for the catalog"
    raise KvcalcError(f"unknown {kind} {ref[:80]!r}", where, accepted + (" (or give a spec file's path)"))


def _config_name(path: Path) -> str:
    """A config.json's model name: its folder's, or in the Hugging Face cache
    (``models--org--name/snapshots/<revision>/config.json``) the repository's ``org/name``."""
    if path.name != "config.json":
        return path.stem.lower()
    repo = path.parent.parent.parent.name if path.parent.parent.name == "snapshots" else ""
    if repo.startswith("models--") and repo.count("--") >= 2:
        return repo[len("models--") :].replace("--", "/", 1).lower()
    return path.parent.name.lower()


def hf_cached_config(repo_id: str) -> Path | None:
    """The config.json of ``org/name`` in the local Hugging Face hub cache, if it was downloaded:
    $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub; the snapshot refs/main names,
    else the most recently written one. Nothing is fetched."""
    import os

    org, _, name = repo_id.partition("/")
    if not org or not name or any(c in repo_id for c in ("..", "\\", "\0")):
        return None
    hub = os.environ.get("HF_HUB_CACHE") or (
        str(Path(os.environ["HF_HOME"]) / "hub")
        if os.environ.get("HF_HOME")
        else str(Path.home() / ".cache" / "huggingface" / "hub")
    )
    root = Path(hub).expanduser() / f"models--{org}--{name}"
    try:
        ref = (root / "refs" / "main").read_text(encoding="utf-8").strip()
        snap = root / "snapshots" / ref / "config.json"
        if ref and snap.is_file():
            return snap
        found = sorted((p for p in (root / "snapshots").glob("*/config.json") if p.is_file()), key=lambda p: p.stat().st_mtime)
    except (OSError, ValueError):
        return None
    return found[-1] if found else None


def suggest(kind: Kind, ref: str, n: int = 3) -> list[str]:
    """Canonical names closest to what was typed, comparing loose spellings of names and aliases."""
    import difflib

    typed = _squash(ref)
    scores: dict[str, float] = {}
    for key, name in alias_index(kind).items():
        k = _squash(key)
        score = difflib.SequenceMatcher(None, typed, k).ratio()
        if typed and (k.startswith(typed) or typed in k):
            score = max(score, 0.75)
        if len(k) >= 6 and k in typed:
            # A checkpoint's name holds its base model's ('Qwen3-30B-A3B-Thinking-2507-AWQ-4bit'): the longer the
            # catalog name it holds, the nearer.
            score = max(score, 0.7 + 0.25 * len(k) / len(typed))
        if score > scores.get(name, 0):
            scores[name] = score
    best = sorted((v, k) for k, v in scores.items() if v >= 0.5)[::-1]
    return [k for _, k in best[:n]]


def spec_kind(name: str, where: str = "NAME") -> Kind:
    """Whether ``name`` is a model or a GPU: a catalog name or alias, else a file's contents tell."""
    if canonical_name("model", name):
        return "model"
    if canonical_name("gpu", name):
        return "gpu"
    p = Path(name)
    what = probe(p)
    if what == "file" and p.suffix in (".yaml", ".yml"):
        text = read_text(p)
        return "gpu" if "memory_bandwidth_bytes_per_s" in text else "model"
    if what:
        return "model"
    near = suggest("model", name) + suggest("gpu", name)
    accepted = ("did you mean " + ", ".join(near[:4]) + "?") if near else "see 'kvcalc models' and 'kvcalc gpus'"
    raise KvcalcError(f"unknown model or GPU {name[:60]!r}", where, accepted)


def resolve_model(ref: str, where: str = "model", files_allowed: bool = True) -> ModelSpec:
    m: ModelSpec = resolve("model", ref, where, files_allowed)
    return m


def resolve_gpu(ref: str, where: str = "gpu") -> GPUSpec:
    g: GPUSpec = resolve("gpu", ref, where)
    return g


def all_specs(kind: Kind) -> list[Any]:
    return [_load_catalog(kind, n) for n in catalog_files(kind)]


if __name__ == "__main__":
    INDEX.write_text(json.dumps(build_index(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {INDEX}")
