"""The engine: pure math on specs, returning one frozen report dataclass per question. No I/O, no
printing, no torch; numpy only inside the functions that sweep."""
