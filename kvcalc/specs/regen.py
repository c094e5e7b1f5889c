"""Regenerate the catalog's model YAML files from tests/configs (a maintainer's tool).

Each ``model_specs/<name>.yaml`` is the import of ``tests/configs/<name>.json`` (the official
config.json's field values) with the catalog's own header comment, aliases and description kept.
Run ``python -m kvcalc.specs.regen`` after changing the importer, then ``python -m kvcalc.specs.catalog``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def regen(names: list[str] | None = None) -> list[str]:
    import yaml

    from kvcalc.specs.hf import spec_dict_from_config
    from kvcalc.specs.loader import to_yaml

    written = []
    for cfg_path in sorted((ROOT / "tests" / "configs").glob("*.json")):
        name = cfg_path.stem
        if names and name not in names:
            continue
        spec_path = ROOT / "model_specs" / f"{name}.yaml"
        text = spec_path.read_text(encoding="utf-8")
        header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
        old = yaml.safe_load(text)
        d, warnings = spec_dict_from_config(json.loads(cfg_path.read_text()), old["source"]["url"], name=name)
        if warnings:
            raise SystemExit(f"{name}: {warnings}")
        d["aliases"] = old.get("aliases", [])
        d["description"] = old.get("description", "")
        order = ["name", "aliases", "description"] + [k for k in d if k not in ("name", "aliases", "description")]
        spec_path.write_text(header + to_yaml({k: d[k] for k in order}), encoding="utf-8")
        written.append(name)
    return written


if __name__ == "__main__":
    import json

    from kvcalc.specs.catalog import INDEX, build_index

    print("regenerated:", ", ".join(regen(sys.argv[1:] or None)))
    # The catalog index (kvcalc/specs/catalog.json) mirrors the YAML files: rebuild it with them.
    INDEX.write_text(json.dumps(build_index(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
