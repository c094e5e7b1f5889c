"""kvcalc measure: a real paged-attention decode step, checked and timed against the bound.

The only package that imports torch (and Triton), always inside functions: importing
``kvcalc.measure`` itself costs nothing.
"""
