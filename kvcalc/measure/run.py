"""kvcalc measure: build, check, time, and hold a real paged decode step against the bound."""

from __future__ import annotations

from dataclasses import field

from kvcalc._record import record
from kvcalc.errors import KvcalcError
from kvcalc.measure.cache import Geometry, build, reference, rel_error, step_bytes, step_flops
from kvcalc.measure.device import _free_bytes, _kernel

TOLERANCE = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 1e-2}
# On a GPU, Triton's fp32 dots (and cuBLAS's, where tf32 is on) round their inputs to tf32: 10 bits
# of mantissa, so errors near 1e-3.
GPU_FP32_TOLERANCE = 2e-3
CPU_KERNELS = ("cpu-paged", "sdpa-dense", "gather-sdpa")
GPU_KERNELS = ("triton-paged", "sdpa-dense", "gather-sdpa")


@record
class KernelResult:
    kernel: str
    rel_error: float
    correct: bool
    t_measured_s: float | None = None
    t_p10_s: float | None = None
    t_p90_s: float | None = None
    runs: int = 0
    achieved_bytes_per_s: float | None = None
    pct_read_ceiling: float | None = None
    pct_datasheet: float | None = None
    measured_over_bound: float | None = None
    cuda_graph: bool = False
    stable: bool = True
    """False when repeats disagree beyond the stated spread: the median is not a precise figure."""
    note: str = ""


@record
class MeasureResult:
    model: str
    device: str
    device_name: str
    label: str
    kernel: str
    """The kernel the top-level figures are for: the project's own (triton-paged on a GPU, cpu-paged on a CPU)."""
    t_measured_s: float | None
    t_bound_s: float
    measured_over_bound: float | None
    achieved_bytes_per_s: float | None
    read_ceiling_bytes_per_s: float
    copy_ceiling_bytes_per_s: float
    datasheet_bytes_per_s: float | None
    peak_flops_per_s: float
    rel_error: float
    bytes: int
    kv_bytes: int
    flops: int
    bound_by: str
    geometry: dict
    batch: int
    seq_lens: dict
    dtype: str
    layers: int
    caches: int
    clocks: dict = field(default_factory=dict)
    kernels: list[KernelResult] = field(default_factory=list)
    weights: dict | None = None
    full_step: dict | None = None
    kv_dtype: str = ""
    threads: int | None = None
    notes: list[str] = field(default_factory=list)
    memory_needed_bytes: int = 0
    """What the measurement allocates at its peak (caches, baselines, ceiling buffers, weights),
    which it checks against the device's free memory before it starts (memory_needed)."""
    memory_free_bytes: int = 0
    """The device's free memory when it started (CUDA: mem_get_info; CPU: MemAvailable)."""


def _device_info(device: str) -> tuple[str, dict, int, int]:
    """(name, clocks, SM count, L2 bytes)."""
    import platform

    if device != "cuda":
        return platform.processor() or platform.machine(), {}, 1, 0
    import torch

    p = torch.cuda.get_device_properties(0)
    clocks = {}
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        clocks = {
            "sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            "mem_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
        }
    except Exception:
        pass
    return p.name, clocks, p.multi_processor_count, getattr(p, "L2_cache_size", 50 * 2**20)


def measure(
    geo: Geometry,
    lens: list[int],
    *,
    device: str,
    dtype_name: str,
    layers: int = 1,
    kernels=None,
    gpu_spec=None,
    model=None,
    seed: int = 0,
    runs: int | None = None,
    weights: bool = False,
    progress=None,
    kv_fp8: bool = False,
    full_step: bool = False,
    threads: int | None = None,
) -> MeasureResult:
    import torch

    from kvcalc.specs.dtypes import kv_dtype

    dtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype_name]
    elt = torch.tensor([], dtype=dtype).element_size()
    kv_elt = 1 if kv_fp8 else elt
    name, clocks, sms, l2 = _device_info(device)
    notes = []
    one = step_bytes(geo, lens, elt, kv_elt)
    # Working set at least 4x L2 on a GPU: rotate among enough caches.
    rotate = max(1, -(-4 * l2 // one)) if device == "cuda" else 1
    n_caches = max(layers, rotate)
    names = list(kernels or (GPU_KERNELS if device == "cuda" else CPU_KERNELS))
    ceiling_bytes = 2 * 2**30 if device == "cuda" else 256 * 2**20

    def needed(kernel_names: list[str]) -> int:
        return memory_needed(
            geo, lens, elt, kv_elt, n_caches, kernel_names, ceiling_bytes, device, model if weights else None, layers
        )

    need = needed(names)
    free = _free_bytes(device)
    if kernels is None:
        # The default baselines are for comparison: one that does not fit is left out, said in a note,
        # rather than refusing the kernel under test (sdpa-dense's copy repeats the KV for every query
        # head: 146 GB for DeepSeek-V3's latent at 64 x 4,096 in bf16, where the paged cache is 0.3 GB).
        for drop in ("sdpa-dense", "gather-sdpa"):
            if need <= 0.9 * free:
                break
            if drop in names:
                names.remove(drop)
                smaller = needed(names)
                notes.append(
                    f"{drop} left out: with it the measurement needs {need:,} B, more than 90% of the {free:,} B free "
                    f"on the {device}; without it, {smaller:,} B"
                )
                need = smaller
    if need > 0.9 * free:
        raise KvcalcError(
            f"the measurement needs {need:,} B (caches, baselines, ceiling buffers and weights) and the {device} has "
            f"{free:,} B free",
            "--batch/--seq",
            "a smaller batch, context or --layers (or --quick)",
        )
    tick = progress or (lambda label: None)
    tick("building caches")
    caches = [build(geo, lens, dtype, device, seed=seed + i, kv_fp8=kv_fp8) for i in range(n_caches)]
    if rotate > 1:
        notes.append(f"{n_caches} caches rotated so the working set ({n_caches * one:,} B) is at least 4x L2")
    topk = max((k.sparse_topk for k in model.kinds()), default=0) if model is not None else 0
    if topk:
        notes.append(
            f"{model.name} attends sparsely (an indexer's top-{topk:,}); this measures a dense decode of the latent "
            "over every token, which its engines run only where a context is within the top-k (kvcalc roofline "
            "bounds the sparse step)"
        )
    if kv_fp8:
        from kvcalc.measure.cache import reference as ref_fn

        unq = build(geo, lens, dtype, device, seed=seed)
        notes.append(
            f"fp8 (e4m3) KV with per-tensor scales: its quantization alone moves the answer by "
            f"{rel_error(ref_fn(caches[0]), ref_fn(unq)):.1e} (relative) from the unquantized cache; kernels are "
            "checked against the dequantized cache"
        )
        del unq
    tick("measuring ceilings")
    from kvcalc.measure.timing import SPREAD, ceilings, time_cpu, time_cuda_rotating

    ceil = ceilings(device, ceiling_bytes)

    bytes_ = one * layers
    flops = step_flops(geo, lens) * layers
    # The engine's bound for the same step: KV bytes from the layer kind, plus q and out.
    kv_bytes = (
        sum(lens)
        * layers
        * (
            model_kv_per_token(model, geo, kv_dtype("fp8" if kv_fp8 else _kvname(dtype_name)))
            if model
            else geo.n_kv * (geo.d_k + (0 if geo.v_from_k else geo.dv)) * kv_elt
        )
    )
    ds = gpu_spec.memory_bandwidth_bytes_per_s if (gpu_spec is not None and device == "cuda") else None
    if device == "cuda":
        bw = ds or ceil["read_bytes_per_s"]
        peak = gpu_spec.flops_bf16 if gpu_spec is not None else ceil["matmul_flops_per_s"]
        label = f"HBM of {name}: the datasheet bound" + ("" if ds else " (no GPU spec matched: the measured read ceiling)")
    else:
        bw, peak = ceil["read_bytes_per_s"], ceil["matmul_flops_per_s"]
        label = "this CPU's roofline (measured read ceiling and matmul FLOP/s), not HBM"
    t_mem, t_comp = bytes_ / bw, flops / peak
    t_bound = max(t_mem, t_comp)
    tol = GPU_FP32_TOLERANCE if (device == "cuda" and dtype_name == "float32") else TOLERANCE[dtype_name]
    if tol != TOLERANCE[dtype_name]:
        notes.append(f"float32 on a GPU: dots round inputs to tf32, so the check allows {tol:g}")
    results = []
    for kname in names:
        tick(f"checking {kname}")
        try:
            steps = [_kernel(kname, c, sms) for c in caches]
            out = steps[0]()
        except Exception as e:
            # A kernel that fails to compile or launch costs its own row, not the run.
            msg = " ".join(f"{type(e).__name__}: {e}".split())[:300]
            results.append(KernelResult(kname, float("nan"), False, note=f"failed to build or run: {msg}"))
            continue
        c0 = caches[0]
        ref = reference(c0)
        err = rel_error(out, ref)
        ok = err <= tol
        r = KernelResult(kname, err, ok)
        if not ok:
            r.note = f"relative error {err:.2e} over the {dtype_name} tolerance {tol:g}: not timed"
            results.append(r)
            continue
        tick(f"timing {kname}")
        try:
            if device == "cuda":
                # One step = layers attention calls, each over its own cache; rotating over n_caches.
                per_step = [
                    (lambda i=i, steps=steps: [steps[(i * layers + j) % n_caches]() for j in range(layers)])
                    for i in range(max(n_caches // layers, 1))
                ]
                med, p10, p90, n, graph = time_cuda_rotating(per_step, runs=runs or 100)
                r.cuda_graph = graph
                if not graph:
                    r.note = "CUDA graph capture failed: timed with events per step (launch overhead included)"
            else:
                state = {"i": 0}

                def step(state=state, steps=steps):
                    i = state["i"]
                    for j in range(layers):
                        steps[(i * layers + j) % n_caches]()
                    state["i"] = i + 1

                med, p10, p90, n = time_cpu(step, runs=runs or 50, warmup=3)
        except Exception as e:
            msg = " ".join(f"{type(e).__name__}: {e}".split())[:300]
            r.correct, r.note = False, f"failed while timing: {msg}"
            results.append(r)
            continue
        r.t_measured_s, r.t_p10_s, r.t_p90_s, r.runs = med, p10, p90, n
        r.stable = (p90 - p10) <= SPREAD * med
        if not r.stable:
            r.note = (r.note + "; " if r.note else "") + (
                f"repeats disagree: p10 {p10 * 1e6:,.1f} us, p90 {p90 * 1e6:,.1f} us (more than {SPREAD:.0%} of the median)"
            )
        r.achieved_bytes_per_s = bytes_ / med
        r.pct_read_ceiling = r.achieved_bytes_per_s / ceil["read_bytes_per_s"]
        r.pct_datasheet = r.achieved_bytes_per_s / ds if ds else None
        r.measured_over_bound = med / t_bound
        results.append(r)
    primary = next((r for r in results if r.kernel in ("triton-paged", "cpu-paged") and r.t_measured_s), None) or next(
        (r for r in results if r.t_measured_s), results[0]
    )
    from kvcalc.measure.timing import time_cuda

    wres = (
        time_weights(model, len(lens), layers, device, dtype, bw, time_cuda if device == "cuda" else time_cpu)
        if (weights and model is not None)
        else None
    )
    full = None
    if full_step and model is not None:
        tick("timing a full decode step")
        from kvcalc.measure.full import full_step as run_full

        full = run_full(model, lens, device, dtype, kv_fp8, geo.block_size, bw, peak, sms, l2, runs, seed)
    return MeasureResult(
        model=model.name if model is not None else "",
        device=device,
        device_name=name,
        label=label,
        kernel=primary.kernel,
        t_measured_s=primary.t_measured_s,
        t_bound_s=t_bound,
        measured_over_bound=primary.measured_over_bound,
        achieved_bytes_per_s=primary.achieved_bytes_per_s,
        read_ceiling_bytes_per_s=ceil["read_bytes_per_s"],
        copy_ceiling_bytes_per_s=ceil["copy_bytes_per_s"],
        datasheet_bytes_per_s=ds,
        peak_flops_per_s=peak,
        rel_error=primary.rel_error,
        bytes=bytes_,
        kv_bytes=kv_bytes,
        flops=flops,
        bound_by="memory" if t_mem >= t_comp else "compute",
        geometry={"kind": geo.kind, "n_q": geo.n_q, "n_kv": geo.n_kv, "d_k": geo.d_k, "dv": geo.dv, "block_size": geo.block_size},
        batch=len(lens),
        seq_lens={"min": min(lens), "max": max(lens), "mean": sum(lens) / len(lens), "total": sum(lens)},
        dtype=dtype_name,
        layers=layers,
        caches=n_caches,
        clocks=clocks,
        kernels=results,
        weights=wres,
        full_step=full,
        kv_dtype="fp8" if kv_fp8 else dtype_name,
        threads=threads,
        notes=notes,
        memory_needed_bytes=need,
        memory_free_bytes=free,
    )


def memory_needed(
    geo: Geometry,
    lens: list[int],
    elt: int,
    kv_elt: int,
    n_caches: int,
    kernels: list[str],
    ceiling_bytes: int,
    device: str,
    model=None,
    layers: int = 1,
) -> int:
    """Everything a measurement allocates at once: the caches, the float64 reference of one
    sequence, what each baseline builds (sdpa-dense: a contiguous copy with the query heads
    repeated; gather-sdpa and cpu-paged: one gathered copy), the two ceiling buffers and the
    matmul operands, and --weights' matrices."""
    pages = sum(-(-n // geo.block_size) for n in lens)
    kv_width = geo.d_k + (0 if geo.v_from_k else geo.dv)
    cache = pages * geo.block_size * geo.n_kv * kv_width * kv_elt
    total = n_caches * cache
    longest = max(lens)
    total += longest * geo.n_kv * (geo.d_k + geo.dv) * 8  # reference: one sequence in float64
    gathered = pages * geo.block_size * geo.n_kv * (geo.d_k + geo.dv) * elt
    for k in kernels:
        if k == "sdpa-dense":
            total += len(lens) * longest * geo.n_q * (geo.d_k + geo.dv) * elt * 2  # padded copy + repeated heads
        elif k in ("gather-sdpa", "cpu-paged"):
            total += gathered * (2 if kv_elt != elt else 1)
    total += 2 * ceiling_bytes + (3 * 8192 * 8192 * 2 if device == "cuda" else 3 * 1024 * 1024 * 4)
    if model is not None:
        total += sum(i * o for i, o in weight_shapes(model)) * elt * layers
    return total + (2 * 2**30 if device == "cuda" else 256 * 2**20)


def _kvname(dtype_name: str) -> str:
    return {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}[dtype_name]


def model_kv_per_token(model, geo: Geometry, dt) -> int:
    """KV bytes per token per layer of the kind the geometry came from, as the engine counts them."""
    from kvcalc.engine.alloc import LOGICAL

    for k in model.kinds():
        g = k.decode_geometry()
        if g is not None and g.kind == geo.kind:
            return k.kv_bytes_per_token(dt, 1, LOGICAL)
    raise KvcalcError("no attention layer", "--model", "a model with attention layers")


def weight_shapes(model) -> list[tuple[int, int]]:
    """(in, out) of one layer's matrices: attention projections and the MLP (k experts' worth for a MoE)."""
    H = model.hidden_size
    shapes: list[tuple[int, int]] = next((s for k in model.kinds() if (s := k.projection_shapes(H))), [])
    inter = model.intermediate_size or 4 * H
    experts = model.moe.num_experts_per_tok if model.moe else 1
    shapes += [(H, 2 * inter)] * experts + [(inter, H)] * experts
    return shapes


def time_weights(model, batch: int, layers: int, device: str, dtype, bw: float, timer) -> dict:
    """Matrix-vector products over random weights of one layer's shapes (L layers with --layers)."""
    import torch

    mats = [torch.randn(i, o, dtype=dtype, device=device) for (i, o) in weight_shapes(model) for _ in range(layers)]
    xs = {i: torch.randn(batch, i, dtype=dtype, device=device) for (i, _) in weight_shapes(model)}

    def step():
        for w in mats:
            xs[w.shape[0]] @ w

    med = timer(step)[0]
    nbytes = sum(w.numel() * w.element_size() for w in mats)
    return {
        "weight_bytes": nbytes,
        "t_measured_s": med,
        "t_bound_s": nbytes / bw,
        "measured_over_bound": med / (nbytes / bw),
        "achieved_bytes_per_s": nbytes / med,
        "layers": layers,
    }
