"""Specs: the model and GPU dataclasses, layer kinds and dtypes, their loaders (YAML, config.json),
and the catalog."""
