"""Setting up a measurement: torch, the device, the dtype, the kernels, the geometry and the
lengths (torch is imported here, when a measurement runs, never at start-up)."""

from __future__ import annotations

from typing import Any

from kvcalc.errors import KvcalcError


def run_measure(
    model: Any,
    gpu: str | None,
    batch: int,
    seq: int,
    *,
    seq_dist: str | None = None,
    block_size: int = 16,
    dtype: str | None = None,
    layers: int = 1,
    kernels: list[str] | None = None,
    weights: bool = False,
    device: str = "auto",
    runs: int | None = None,
    seed: int = 0,
    show_progress: bool = True,
) -> Any:
    """Resolve the device and geometry, then measure."""
    try:
        import torch
    except ImportError:
        raise KvcalcError("torch is not installed", "kvcalc measure", "pip install 'kvcalc[measure]' (or torch)") from None
    from kvcalc.measure.cache import geometry_from_model
    from kvcalc.measure.run import CPU_KERNELS, GPU_KERNELS, measure

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise KvcalcError("no CUDA device is available", "--device", "cpu, or run on a machine with a GPU")
    if device not in ("cpu", "cuda"):
        raise KvcalcError(f"unknown device {device[:20]!r}", "--device", "auto, cpu or cuda")
    dtype = dtype or ("bfloat16" if device == "cuda" else "float32")
    dtype = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}.get(dtype, dtype)
    if dtype not in ("bfloat16", "float16", "float32"):
        raise KvcalcError(f"unknown dtype {dtype[:20]!r}", "--dtype", "bf16, fp16 or fp32")
    allowed = GPU_KERNELS if device == "cuda" else CPU_KERNELS + ("triton-paged",)
    for k in kernels or []:
        if k not in allowed:
            raise KvcalcError(f"unknown kernel {k[:40]!r} on {device}", "--kernels", ", ".join(allowed))
    geo = geometry_from_model(model, block_size)
    if seq_dist:
        from kvcalc.inputs.workload import sample_lengths

        lens = [int(x) for x in sample_lengths(seq_dist, batch, seed, 1 << 30)[0]]
    else:
        lens = [seq] * batch
    gspec = None
    if device == "cuda":
        from kvcalc.specs.catalog import canonical_name, resolve_gpu

        if gpu:
            gspec = resolve_gpu(gpu)
        else:
            name = canonical_name("gpu", torch.cuda.get_device_name(0))
            gspec = resolve_gpu(name) if name else None
    status = None
    if show_progress:
        import sys

        if sys.stderr.isatty():
            from rich.console import Console

            status = Console(stderr=True).status("starting")
            status.start()
    try:
        return measure(
            geo,
            lens,
            device=device,
            dtype_name=dtype,
            layers=layers,
            kernels=kernels,
            gpu_spec=gspec,
            model=model,
            seed=seed,
            runs=runs,
            weights=weights,
            progress=(lambda label: status.update(f"{label}...")) if status else None,
        )
    finally:
        if status:
            status.stop()
