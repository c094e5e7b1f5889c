"""kvcalc's release, in a module of its own so that any part may read it without importing the rest."""

__version__ = "0.3.0"
