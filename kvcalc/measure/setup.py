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
    kv_dtype: str | None = None,
    full_step: bool = False,
    threads: int | None = None,
) -> Any:
    """Resolve the device and geometry, then measure."""
    import os
    import sys

    try:
        import torch
    except ImportError:
        raise KvcalcError("torch is not installed", "kvcalc measure", "pip install 'kvcalc[measure]' (or torch)") from None
    from kvcalc.measure.cache import geometry_from_model
    from kvcalc.measure.run import CPU_KERNELS, GPU_KERNELS, measure

    auto = device == "auto"
    if auto:
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
    if device == "cpu" and "triton-paged" in (kernels or []) and os.environ.get("TRITON_INTERPRET") != "1":
        raise KvcalcError(
            "triton-paged needs a GPU, or Triton's interpreter on a CPU",
            "--kernels",
            "run on a GPU, or set TRITON_INTERPRET=1 (slow: for checking, not timing)",
        )
    kv_fp8 = False
    if kv_dtype:
        if kv_dtype.lower() not in ("fp8", "fp8_e4m3", "auto"):
            raise KvcalcError(f"unknown KV dtype {kv_dtype[:20]!r}", "--kv-dtype", "fp8 (e4m3 with a per-tensor scale), or auto")
        kv_fp8 = kv_dtype.lower() != "auto"
    notes: list[str] = []
    if device == "cpu":
        # One thread: two threads on a shared two-core machine flipped between 6 and 160 ms.
        n_threads = threads or 1
        torch.set_num_threads(n_threads)
        notes.append(f"CPU run with {n_threads} torch thread{'s' if n_threads > 1 else ''} (--threads)")
    geo = geometry_from_model(model, block_size)
    if seq_dist:
        from kvcalc.inputs.workload import sample_lengths

        lens = [int(x) for x in sample_lengths(seq_dist, batch, seed, 1 << 30)[0]]
    else:
        lens = [seq] * batch
    gspec = None
    if device == "cuda":
        from kvcalc.specs.catalog import canonical_name, resolve_gpu

        local = canonical_name("gpu", torch.cuda.get_device_name(0))
        if gpu:
            gspec = resolve_gpu(gpu)
            if local and gspec.name != local:
                notes.append(
                    f"--gpu {gspec.name}'s datasheet bound, but this device is {local}: the % sheet column compares "
                    "with another GPU's bandwidth"
                )
        else:
            gspec = resolve_gpu(local) if local else None
    if device == "cpu" and auto and show_progress:
        sys.stderr.write("kvcalc measure: no GPU found; timing this CPU against its own read ceiling and matmul FLOP/s\n")
    status = None
    if show_progress:
        if sys.stderr.isatty():
            from rich.console import Console

            status = Console(stderr=True).status("starting")
            status.start()
    try:
        r = measure(
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
            progress=(lambda label: status.update(f"{label}...")) if status else _plain_progress(show_progress),
            kv_fp8=kv_fp8,
            full_step=full_step,
            threads=(threads or 1) if device == "cpu" else None,
        )
        r.notes = notes + r.notes
        return r
    finally:
        if status:
            status.stop()


def _plain_progress(enabled: bool) -> Any:
    """Progress as plain lines on stderr when it is not a terminal (a log, CI)."""
    import sys
    import time

    if not enabled:
        return None
    t0 = time.time()

    def tick(label: str) -> None:
        sys.stderr.write(f"[{time.time() - t0:6.1f} s] {label}\n")
        sys.stderr.flush()

    return tick
