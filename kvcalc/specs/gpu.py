"""The GPU (accelerator) spec: what a YAML file in gpu_specs/ says.

Sizes and rates may be written with units (``80GB``, ``3.35TB/s``, ``989.5TFLOPS``) or as plain
numbers (bytes, bytes/s, FLOP/s); they are stored as exact numbers.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Union

from kvcalc._record import record
from kvcalc.errors import KvcalcError
from kvcalc.specs.layers import FORBID
from kvcalc.units import parse_rate, parse_size

if TYPE_CHECKING:
    Text = str  # an Annotated constraint for pydantic, bound by kvcalc.specs.constraints.install()
    # After __post_init__ every figure is a number; only a spec file may write units.
    Size = int
    Rate = int
    Flops = float
else:
    Size = Union[int, str]
    """Bytes, or a size with its unit (80GB, 79.19GiB)."""
    Rate = Union[int, str]
    """Bytes per second, or a rate with its unit (3.35TB/s)."""
    Flops = Union[float, str]
    """FLOP/s, or a figure with its unit (989.5TFLOPS)."""


def parse_flops(v: float | str, field: str) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if not v > 0 or v == float("inf"):
            raise ValueError(f"{field} must be a positive number, got {v!r}")
        return float(v)
    m = re.match(r"^\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([TPG]?)(?:FLOPS|FLOP/s|OPS|OP/s)?\s*$", str(v)[:64], re.I)
    try:
        if not m:
            raise InvalidOperation
        out = float(Decimal(m.group(1)) * {"": 1, "G": 10**9, "T": 10**12, "P": 10**15}[m.group(2).upper()])
    except (InvalidOperation, ValueError, OverflowError):
        raise ValueError(f"{field}: cannot read {str(v)[:40]!r} as FLOP/s (e.g. 989.5TFLOPS)") from None
    if not 0 < out < float("inf"):
        raise ValueError(f"{field} must be positive, got {v!r}")
    return out


@record(kw_only=True)
class GPUSource:
    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    url: Text
    notes: str = ""


@record(kw_only=True)
class NodeSpec:
    """The server a GPU comes in, and the links between servers: what decides which collectives
    cross a node (kvcalc.engine.deployment)."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    gpus_per_node: int
    """GPUs in the standard server (HGX/DGX: 8; a GB200 NVL72 compute tray: 4)."""
    nvlink_domain: int
    """GPUs sharing the scale-up fabric (NVLink/NVSwitch, Infinity Fabric, ICI): 8 on HGX, 72 on
    GB200 NVL72, 2 for an NVLink-bridged pair, 1 where GPUs talk over PCIe only."""
    scale_out_bytes_per_s: Rate
    """Network bandwidth between nodes per GPU, one direction (DGX H100: one 400 Gb/s NIC a GPU,
    50 GB/s)."""
    url: Text
    """Where the node shape and network figures come from."""
    scale_out_latency_s: float | None = None
    """Latency of one small collective between nodes, seconds (None: kvcalc's default, 47 us
    measured over 400 Gb/s InfiniBand; RoCE and TCP fabrics run 2 to 3 times that)."""
    notes: str = ""

    def __post_init__(self) -> None:
        for name in ("gpus_per_node", "nvlink_domain"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 100_000:
                raise ValueError(f"{name} must be a whole number of GPUs from 1 to 100,000, got {str(v)[:40]!r}")
        try:
            bw = parse_rate(self.scale_out_bytes_per_s, "scale_out_bytes_per_s")
        except KvcalcError as e:
            raise ValueError(e.line()) from None
        if not 1e6 <= float(bw) <= 1e16:
            raise ValueError(f"scale_out_bytes_per_s is {float(bw):.3g}, outside 1 MB/s to 10 PB/s")
        self.scale_out_bytes_per_s = bw
        v = self.scale_out_latency_s
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1):
            raise ValueError(f"scale_out_latency_s must be seconds between 0 and 1, got {str(v)[:40]!r}")


@record(kw_only=True)
class AllReduceSpec:
    """All-reduce latency among GPUs of one NVLink domain, measured by message size: what a
    tensor-parallel all-reduce of the serving engine costs on this GPU (kvcalc.engine.steptime uses
    it in place of latency + bytes / bandwidth where it has the group size)."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    url: Text
    """Where the measurements come from."""
    message_bytes: list[int]
    """The message sizes measured, bytes, strictly increasing."""
    latency_us: dict[int, list[float]]
    """By group size (GPUs): microseconds at each of message_bytes."""
    notes: str = ""

    def __post_init__(self) -> None:
        b = self.message_bytes
        if not b or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in b):
            raise ValueError("message_bytes must be positive whole numbers of bytes")
        if any(x >= y for x, y in zip(b, b[1:])):
            raise ValueError("message_bytes must be strictly increasing")
        if not self.latency_us:
            raise ValueError("latency_us must give at least one group size")
        for n, row in self.latency_us.items():
            if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 100_000:
                raise ValueError(f"latency_us group size must be a whole number of GPUs from 2, got {str(n)[:40]!r}")
            if len(row) != len(b):
                raise ValueError(f"latency_us[{n}] has {len(row)} figures for {len(b)} message sizes")
            if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1e7 for v in row):
                raise ValueError(f"latency_us[{n}] must be positive microseconds under 10 s")


@record(kw_only=True)
class GemmSpec:
    """How this GPU's decode-shaped matrix multiplies read their weights, measured: a matmul of a
    few tokens takes ``latency_us`` + weight bytes / (datasheet bandwidth x ``bandwidth_share``)
    (kvcalc.engine.steptime uses it in place of the pooled gemm_latency_s and eta_bw where a spec
    has it)."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    url: Text
    """Where the measurements come from."""
    latency_us: float
    """The fixed part of one matmul, microseconds."""
    bandwidth_share: float
    """The share of the datasheet memory bandwidth its weight reads reach."""
    compute_share: float | None = None
    """Where the tables measure matmuls of many tokens too: the share of the dense peak at compute_dtype
    their math reaches, in place of StepConstants.eta_c, eta_c_fp8, eta_c_int8 or eta_c_fp4 for matmuls at that
    precision (None: those)."""
    compute_dtype: Literal["bf16", "fp8", "fp4"] = "bf16"
    """The precision the tables' matmuls ran in: compute_share and combine hold for a step's matmuls at it."""
    combine: Literal["rss", "sum"] = "rss"
    """How a matmul's weight reads and its math combine in the measured tables (matmuls at compute_dtype;
    others take "rss"): "rss", the root-sum-square of the two (NVIDIA's, kvcalc.engine.steptime.matmul_s),
    or "sum", one after the other (the two overlap not at all: AMD aiter's MI300X GEMMs,
    gpu_specs/mi300x.yaml)."""
    notes: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.latency_us, bool) or not 0 <= self.latency_us < 1000:
            raise ValueError("latency_us must be microseconds from 0 to 1,000")
        if isinstance(self.bandwidth_share, bool) or not 0.01 <= self.bandwidth_share <= 1:
            raise ValueError("bandwidth_share must be a fraction from 0.01 to 1")
        c = self.compute_share
        if c is not None and (isinstance(c, bool) or not 0.01 <= c <= 1):
            raise ValueError("compute_share must be a fraction from 0.01 to 1")
        if self.combine not in ("rss", "sum"):
            raise ValueError(f"combine must be rss or sum, got {str(self.combine)[:40]!r}")
        if self.compute_dtype not in ("bf16", "fp8", "fp4"):
            raise ValueError(f"compute_dtype must be bf16, fp8 or fp4, got {str(self.compute_dtype)[:40]!r}")


@record(kw_only=True)
class AttentionSpec:
    """What this GPU's decode attention kernel costs per request, measured: beyond its bytes over the
    bandwidth, each call takes ``request_head_ns`` for every (request, KV head) pair it runs on the GPU,
    the per-request work of its thread blocks, which a batch of hundreds of short requests makes the
    larger part of the call (kvcalc.engine.steptime uses it in place of ATTN_REQUEST_S where a spec
    has it)."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    url: Text
    """Where the measurements come from."""
    request_head_ns: float
    """Nanoseconds per request and KV head, per attention call."""
    notes: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.request_head_ns, bool) or not 0 <= self.request_head_ns < 100_000:
            raise ValueError("request_head_ns must be nanoseconds from 0 to 100,000")


@record(kw_only=True)
class MoeSpec:
    """The routed experts' share of the 16-bit peak in the Triton fused-MoE kernel on this GPU, measured: a x n / (n + b)
    for an expert of intermediate width n on a GPU (kvcalc.engine.steptime uses it in place of MOE_ETA['bf16'] where a
    spec has it; fp8 experts keep MOE_ETA's)."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    url: Text
    """Where the measurements come from."""
    bf16_a: float
    """a: the share the widest experts approach."""
    bf16_b: float
    """b: the width, in elements, at which an expert reaches half of a."""
    notes: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.bf16_a, bool) or not 0 < self.bf16_a <= 1:
            raise ValueError("bf16_a must be a share of the peak above 0 and at most 1")
        if isinstance(self.bf16_b, bool) or not 0 < self.bf16_b <= 100_000:
            raise ValueError("bf16_b must be a width in elements above 0 and at most 100,000")


@record(kw_only=True)
class MlaSpec:
    """What one MLA decode attention call costs on this GPU beyond its bytes, measured: the attention
    kernel with the latent cache's write and the absorbed multiplies around it, the floor a small batch
    pays (kvcalc.engine.steptime uses it in place of MLA_ATTN_LATENCY_S where a spec has it)."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    url: Text
    """Where the measurements come from."""
    latency_us: float
    """Microseconds a call."""
    notes: str = ""
    sglang_latency_us: float | None = None
    """SGLang's own MLA call, where its releases run another kernel than the one latency_us measures and a
    public microbenchmark times it (kvcalc.engine.engines.mla_kernel says which releases)."""
    sglang_url: str = ""
    """Where sglang_latency_us comes from."""

    def __post_init__(self) -> None:
        for name in ("latency_us", "sglang_latency_us"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not 0 <= v < 100_000):
                raise ValueError(f"{name} must be microseconds from 0 to 100,000")
        if self.sglang_latency_us is not None and not self.sglang_url.strip():
            raise ValueError("sglang_latency_us needs sglang_url, where it was measured")


@record(kw_only=True)
class GPUSpec:
    __pydantic_config__: ClassVar[dict[str, str]] = FORBID

    name: Text
    aliases: list[str] = dataclasses.field(default_factory=list)
    vendor: str
    description: str = ""
    source: GPUSource
    memory_bytes: Size
    """Memory as the vendor states it (decimal GB on the datasheet)."""
    memory_runtime_bytes: Size
    """Memory as the runtime reports it (torch.cuda.mem_get_info()[1]); what engines budget against."""
    memory_runtime_measured: bool = False
    """True when memory_runtime_bytes was read off a real device, False for an estimate."""
    memory_smi_mib: int | None = None
    """memory.total as nvidia-smi reports it, in MiB (SGLang derives its memory fraction from it)."""
    memory_bandwidth_bytes_per_s: Rate
    flops_bf16: Flops
    """Dense bf16/fp16 tensor FLOP/s (never the 2:4 sparse figure)."""
    flops_fp8: Flops | None = None
    """Dense fp8 FLOP/s, where the part has fp8 units."""
    flops_fp4: Flops | None = None
    """Dense FLOP/s of its 4-bit floating-point units (NVFP4: e2m1 values, an fp8 scale a block of 16), where the part
    has them (NVIDIA Blackwell); None: 4-bit checkpoints' matmuls run at the 16-bit peak."""
    flops_int8: Flops | None = None
    """Dense INT8 tensor operations a second, as the vendor states them (never the 2:4 sparse figure), where the part has
    INT8 tensor units and a public figure; None: W8A8 int8 checkpoints' matmuls are priced at the 16-bit peak."""
    interconnect_bytes_per_s: Rate | None = None
    """GPU-to-GPU bandwidth per GPU as datasheets state it: both directions together (NVLink,
    Infinity Fabric, ICI). One direction is half."""
    host_link_bytes_per_s: Rate | None = None
    """Host link (PCIe or C2C) bandwidth, both directions together as datasheets state it."""
    node: NodeSpec | None = None
    """The server it comes in and the network between servers; None: one 8-GPU node is assumed
    (kvcalc.engine.deployment.DEFAULT_NODE)."""
    allreduce: AllReduceSpec | None = None
    """Measured all-reduce latencies inside the NVLink domain, where a public microbenchmark gives
    them; None: latency + bytes / bandwidth (kvcalc.engine.steptime)."""
    allreduce_trtllm: AllReduceSpec | None = None
    """Measured latencies of TensorRT-LLM's own all-reduce inside the NVLink domain, where a public microbenchmark gives
    them: what a TensorRT-LLM deployment's TP all-reduces cost in place of ``allreduce`` (vLLM's); None: ``allreduce``."""
    nccl_allreduce: AllReduceSpec | None = None
    """Measured latencies of NCCL's own all-reduce inside the NVLink domain (nccl-tests), where a public
    microbenchmark gives them: what a message the engines' custom all-reduce declines costs (one not a whole number
    of 16 B: kvcalc.engine.steptime.CUSTOM_AR_ALIGN); None: such a message is charged as ``allreduce``."""
    nccl_allgather: AllReduceSpec | None = None
    """Measured latencies of NCCL's all-gather inside the NVLink domain (nccl-tests), by the gathered buffer's bytes:
    what data-parallel attention's gather of every rank's tokens costs (kvcalc.engine.steptime.StepModel.moe_exchange_s);
    None: latency + bytes / bandwidth."""
    nccl_reducescatter: AllReduceSpec | None = None
    """The same for NCCL's reduce-scatter, by the reduced buffer's bytes: data-parallel attention's scatter of the
    experts' outputs back to each rank."""
    gemm: GemmSpec | None = None
    """Measured decode-shaped matmul latency and bandwidth share, where a public microbenchmark gives
    them; None: the step model's pooled defaults (kvcalc.engine.steptime)."""
    gemm_fp8: GemmSpec | None = None
    """The same for fp8 (W8A8) matmuls, the latency without their input's quantization (a small kernel
    of its own in the step model); None: the gemm block's figures serve fp8 matmuls too."""
    gemm_fp8_trtllm: GemmSpec | None = None
    """TensorRT-LLM's own fp8 (W8A8, per-tensor scales) matmuls, measured, in their static-scale form (neither the input's
    scale computed nor its quantization): what a TensorRT-LLM deployment's fp8 matmuls take in place of ``gemm_fp8``
    (vLLM's); None: ``gemm_fp8``."""
    gemm_fp4: GemmSpec | None = None
    """The same for NVFP4 (W4A4) matmuls, the latency without their input's 4-bit quantization; None: the gemm
    block's figures serve them."""
    attention: AttentionSpec | None = None
    """Measured decode attention cost per request and KV head, where a public microbenchmark gives it;
    None: the step model's default (kvcalc.engine.steptime.ATTN_REQUEST_S)."""
    moe: MoeSpec | None = None
    """The Triton fused-MoE kernel's measured share of the 16-bit peak by expert width, where a public microbenchmark
    gives it for this GPU; None: the step model's default (kvcalc.engine.steptime.MOE_ETA, fitted on Hopper)."""
    mla: MlaSpec | None = None
    """Measured latency of an MLA decode attention call, where a public microbenchmark gives it; None:
    the step model's default (kvcalc.engine.steptime.MLA_ATTN_LATENCY_S)."""
    multiprocessors: int | None = None
    """Streaming multiprocessors (NVIDIA) or compute units (AMD), as the vendor's architecture paper or
    datasheet states them: what torch's multi_processor_count reports, and what sizes vLLM's Triton
    sampler buffer. None: not published for this part."""

    def __post_init__(self) -> None:
        def conv(name: str, fn: Callable[[Any, str], float]) -> None:
            v = getattr(self, name)
            if v is None:
                return
            try:
                out = fn(v, name)
            except KvcalcError as e:
                raise ValueError(e.line()) from None
            if out <= 0:
                raise ValueError(f"{name} must be positive, got {v!r}")
            setattr(self, name, out)

        if self.memory_smi_mib is not None and (
            isinstance(self.memory_smi_mib, bool)
            or not isinstance(self.memory_smi_mib, int)
            or not 0 < self.memory_smi_mib < 2**40
        ):
            raise ValueError(f"memory_smi_mib must be a positive whole number of MiB, got {str(self.memory_smi_mib)[:40]!r}")
        if self.multiprocessors is not None and (
            isinstance(self.multiprocessors, bool)
            or not isinstance(self.multiprocessors, int)
            or not 0 < self.multiprocessors < 100_000
        ):
            raise ValueError(f"multiprocessors must be a whole number from 1 to 99,999, got {str(self.multiprocessors)[:40]}")
        conv("memory_bytes", parse_size)
        conv("memory_runtime_bytes", parse_size)
        for n in ("memory_bandwidth_bytes_per_s", "interconnect_bytes_per_s", "host_link_bytes_per_s"):
            conv(n, parse_rate)
        conv("flops_bf16", parse_flops)
        conv("flops_fp8", parse_flops)
        conv("flops_fp4", parse_flops)
        conv("flops_int8", parse_flops)
        # Figures no accelerator has are a typo, and would make every time in a report inf or 0.
        for name, lo, hi, words in (
            ("flops_bf16", 1e9, 1e19, "1 GFLOP/s to 10 EFLOP/s"),
            ("flops_fp8", 1e9, 1e19, "1 GFLOP/s to 10 EFLOP/s"),
            ("flops_fp4", 1e9, 1e19, "1 GFLOP/s to 10 EFLOP/s"),
            ("flops_int8", 1e9, 1e19, "1 GFLOP/s to 10 EFLOP/s"),
            ("memory_bandwidth_bytes_per_s", 1e8, 1e16, "100 MB/s to 10 PB/s"),
            ("interconnect_bytes_per_s", 1e6, 1e16, "1 MB/s to 10 PB/s"),
            ("host_link_bytes_per_s", 1e6, 1e16, "1 MB/s to 10 PB/s"),
        ):
            v = getattr(self, name)
            if v is not None and not lo <= float(v) <= hi:
                raise ValueError(f"{name} is {float(v):.3g}, outside {words}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GPUSpec:
        d = dict(d)
        d["source"] = GPUSource(**d["source"])
        if isinstance(d.get("node"), dict):
            d["node"] = NodeSpec(**d["node"])
        for key in ("allreduce", "allreduce_trtllm", "nccl_allreduce", "nccl_allgather", "nccl_reducescatter"):
            if isinstance(d.get(key), dict):
                ar = dict(d[key])
                # JSON (the catalog index) writes the group sizes as strings.
                ar["latency_us"] = {int(k): v for k, v in ar.get("latency_us", {}).items()}
                d[key] = AllReduceSpec(**ar)
        if isinstance(d.get("gemm"), dict):
            d["gemm"] = GemmSpec(**d["gemm"])
        for key in ("gemm_fp8", "gemm_fp8_trtllm"):
            if isinstance(d.get(key), dict):
                d[key] = GemmSpec(**d[key])
        if isinstance(d.get("gemm_fp4"), dict):
            d["gemm_fp4"] = GemmSpec(**d["gemm_fp4"])
        if isinstance(d.get("attention"), dict):
            d["attention"] = AttentionSpec(**d["attention"])
        if isinstance(d.get("moe"), dict):
            d["moe"] = MoeSpec(**d["moe"])
        if isinstance(d.get("mla"), dict):
            d["mla"] = MlaSpec(**d["mla"])
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
