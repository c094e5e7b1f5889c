"""A deployment's shape, laid on nodes: what each GPU holds and which link each collective crosses.

A shape is ``TP x PP x DP-attention x EP`` on one GPU type (kvcalc plan adds replicas and
prefill/decode pools around it):

- ``tp``: tensor parallelism of the attention (and of the dense layers) inside one DP rank;
- ``dp``: data-parallel attention ranks. Each has its own scheduler and KV pool and keeps only its
  own requests' KV; the attention and dense weights are replicated on every DP rank;
- ``ep``: expert parallelism: 1, or every GPU of a stage (``dp x tp``), each holding
  ``ceil(E / ep)`` whole routed experts;
- ``pp``: pipeline stages, each of ``dp x tp`` GPUs.

So a stage has ``dp x tp`` GPUs and the shape ``dp x tp x pp``. The routed experts split over all
``dp x tp`` GPUs of a stage whether EP is on or not (without it every expert is split ``dp x tp``
ways by its intermediate size): vLLM flattens DP x TP into one MoE group
(vllm/model_executor/layers/fused_moe/config.py, FusedMoEParallelConfig.make, 0.33.0), SGLang's
MoE runs over its whole --tp-size with --ep-size equal to it (sglang/srt/server_args.py, 0.5.23).

In SGLang's words the same shape is ``--tp-size dp*tp --dp-size dp --enable-dp-attention``
(attention TP = tp-size / dp-size) with ``--ep-size dp*tp``; in vLLM's, ``--tensor-parallel-size tp
--data-parallel-size dp --enable-expert-parallel``. :func:`engine_flags` says which.

Nodes: a GPU spec's ``node`` gives the GPUs per server, the NVLink (scale-up) domain and the
network per GPU. A group of GPUs talks over NVLink when it fits the domain, over PCIe when it fits
a node without one, and over the network otherwise (:func:`group_link_kind`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from kvcalc._record import record
from kvcalc.engine.kv import check_parallel
from kvcalc.errors import KvcalcError
from kvcalc.specs.model import ModelSpec

if TYPE_CHECKING:
    from kvcalc.engine.engines import Engine
    from kvcalc.specs.gpu import GPUSpec, NodeSpec

DEFAULT_NODE_URL = "kvcalc default: an 8-GPU server with a 200 Gb/s NIC a GPU (no node block in the GPU spec)"


def node_of(gpu: GPUSpec) -> NodeSpec:
    """The GPU's node as its spec states it; a spec without one gets an 8-GPU server, NVLink across
    it where the spec has an interconnect, and 25 GB/s (200 Gb/s) of network a GPU, said as assumed."""
    from kvcalc.specs.gpu import NodeSpec  # (size and fit of a model alone need no GPU module)

    if gpu.node is not None:
        return gpu.node
    return NodeSpec(
        gpus_per_node=8,
        nvlink_domain=8 if gpu.interconnect_bytes_per_s else 1,
        scale_out_bytes_per_s=25_000_000_000,
        url=DEFAULT_NODE_URL,
    )


@record(frozen=True)
class Shape:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1

    @property
    def stage_gpus(self) -> int:
        """GPUs of one pipeline stage: the DP ranks' TP groups together."""
        return self.dp * self.tp

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp

    @property
    def expert_split(self) -> int:
        """The GPUs a stage's routed experts are spread over (by expert with EP, else by width)."""
        return self.dp * self.tp

    def describe(self) -> str:
        parts = []
        if self.dp > 1:
            parts.append(f"DP {self.dp}")
        parts.append(f"TP {self.tp}")
        if self.ep > 1:
            parts.append(f"EP {self.ep}")
        if self.pp > 1:
            parts.append(f"PP {self.pp}")
        return " x ".join(parts)


def role_splits(shape: Shape, engine: Engine | None) -> dict[str, int]:
    """How many ways each weight role splits under data-parallel attention, where the engines differ
    from 'a tp-th of the split roles on every DP rank' (kvcalc.engine.weights.weights):

    - SGLang 0.5.23 with DP attention: the dense MLP layers shard over the whole TP group
      (--moe-dense-tp-size unset; sglang/srt/models/deepseek_v2.py), the LM head too unless
      --enable-dp-lm-head (layers/vocab_parallel_embedding.py), and the shared experts under its
      default all-to-all backend 'none' (deepseek_v2.py): dp x tp ways;
    - vLLM 0.33 with DP, EP and TP > 1: the shared experts sit whole on every GPU under the default
      allgather_reducescatter backend (vllm/model_executor/models/deepseek_v2.py, DeepseekV2MoE).
    """
    if shape.dp <= 1 or engine is None:
        return {}
    wide = shape.dp * shape.tp
    if engine.name == "sglang":
        return {"mlp": wide, "lm_head": wide, "shared_experts": wide}
    if engine.name == "vllm" and shape.ep > 1 and shape.tp > 1:
        return {"shared_experts": 1}
    return {}


def engine_flags(shape: Shape, engine: Engine) -> str:
    """The shape in the engine's own flags."""
    if engine.name == "sglang":
        # 0.5.22 renamed attention DP --attn-dp-size (--dp-size now counts whole replicas);
        # sglang/srt/server_args.py, 0.5.23. The older spelling is --dp-size N --enable-dp-attention
        # (server_args.py, 0.4.0 to 0.5.9), which the records of releases before 0.5.20 print; the
        # current record ("0.5", 0.5.20 and later) prints 0.5.23's.
        s = f"--tp-size {shape.dp * shape.tp}"
        if shape.dp > 1 and engine.older_than(0, 5, 22):
            s += f" --dp-size {shape.dp} --enable-dp-attention"
        elif shape.dp > 1:
            s += f" --attn-dp-size {shape.dp}"
        if shape.ep > 1:
            s += f" --ep-size {shape.ep}"
    elif engine.name == "trtllm":
        # trtllm-serve's own flags (tensorrt_llm/commands/serve.py; InferenceMAX's launch scripts pass
        # --tp_size and --ep_size).
        s = f"--tp_size {shape.tp}"
        if shape.ep > 1:
            s += f" --ep_size {shape.ep}"
        if shape.pp > 1:
            s += f" --pp_size {shape.pp}"
        return s
    else:
        s = f"--tensor-parallel-size {shape.tp}"
        if shape.dp > 1:
            s += f" --data-parallel-size {shape.dp}"
        if shape.ep > 1:
            s += " --enable-expert-parallel"
    if shape.pp > 1:
        s += f" --pipeline-parallel-size {shape.pp}" if engine.name != "sglang" else f" --pp-size {shape.pp}"
    return s


def check_shape(model: ModelSpec, shape: Shape, engine: Engine | None = None) -> None:
    """Refuse, in one line, the shapes no engine runs."""
    for flag, v in (("dp", shape.dp), ("ep", shape.ep)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 4096:
            raise KvcalcError(f"{flag.upper()} {str(v)[:20]} is not a size kvcalc sizes", flag, "a whole number from 1 to 4096")
    check_parallel(model, shape.tp, shape.pp)
    if shape.ep > 1:
        if not model.moe:
            raise KvcalcError(
                f"EP {shape.ep}: {model.name} is a dense model; expert parallelism needs routed experts",
                "ep",
                "EP 1 for a dense model (spread it with DP or TP)",
            )
        if shape.ep != shape.stage_gpus and engine is not None and engine.name == "trtllm":
            raise KvcalcError(
                f"EP {shape.ep} with TP {shape.stage_gpus}: kvcalc models TensorRT-LLM's moe_expert_parallel_size only "
                "equal to the TP size (moe_tp_size 1, every expert whole on one GPU)",
                "ep",
                f"EP 1 or {shape.stage_gpus}",
            )
        if shape.ep != shape.stage_gpus:
            raise KvcalcError(
                f"EP {shape.ep} must equal DP x TP = {shape.stage_gpus}: vLLM's --enable-expert-parallel and "
                "SGLang's --ep-size spread the experts over every GPU of a stage",
                "ep",
                f"EP 1 or {shape.stage_gpus}",
            )
        if engine is not None and engine.name == "sglang" and model.moe.num_experts % shape.ep:
            raise KvcalcError(
                f"EP {shape.ep} does not divide {model.name}'s {model.moe.num_experts} routed experts, which SGLang "
                "requires (sglang/srt/layers/moe/fused_moe_triton/layer.py, 0.5.23)",
                "ep",
                "an EP size that divides the expert count",
            )
        if shape.ep > model.moe.num_experts:
            raise KvcalcError(
                f"EP {shape.ep} is more ranks than {model.name}'s {model.moe.num_experts} routed experts",
                "ep",
                f"at most {model.moe.num_experts}",
            )
    if engine is not None and (shape.dp > 1 or shape.ep > 1):
        # TensorRT-LLM 1.x's PyTorch backend with moe_expert_parallel_size = TP and attention DP off
        # (enable_attention_dp false): attention stays TP over the ranks (mapping.py: moe_tp_size = world //
        # moe_ep_size, attn_tp_size = tp_size) with the KV cache split as without EP (pyexecutor/resource_manager.py),
        # each rank runs its whole local experts on every token and an all-reduce combines them as under TP
        # (fused_moe/interface.py: all-to-all only with attention DP; modeling_deepseekv3.py), and the shared
        # experts stay TP-split; read at 1.0.0rc4 and 1.2.0rc2, either side of 1.1.
        if engine.name == "trtllm" and shape.dp == 1 and not engine.older_than(1, 0):
            return
        if engine.name == "trtllm" and not engine.older_than(1, 0):
            raise KvcalcError(
                f"{engine.title} has no data-parallel attention (enable_attention_dp) in kvcalc's rules",
                "dp",
                "DP 1 (expert parallelism with EP = TP is modelled), or the engine vllm or sglang",
            )
        if engine.name not in ("vllm", "sglang"):
            raise KvcalcError(
                f"{engine.title} has no data-parallel attention or expert parallelism in kvcalc's rules",
                "engine",
                "vllm (0.8 and later) or sglang",
            )
        # vLLM's --enable-expert-parallel (experts over the TP x DP ranks) is in 0.8.0's
        # engine/arg_utils.py and not 0.7.3's; --data-parallel-size is in 0.8.4's and not 0.8.0's.
        if engine.name == "vllm" and shape.ep > 1 and engine.older_than(0, 8, 0):
            raise KvcalcError(f"{engine.title} predates --enable-expert-parallel (vLLM 0.8.0)", "engine", "vllm@0.8 or later")
        if engine.name == "vllm" and shape.dp > 1 and engine.older_than(0, 8, 4):
            raise KvcalcError(
                f"{engine.title} predates --data-parallel-size (read in vLLM 0.8.4, not in 0.8.0)",
                "engine",
                "vllm@0.8.4 or later",
            )
        # --enable-dp-attention is in 0.3.6's server_args.py and not 0.3.5's.
        if engine.name == "sglang" and shape.dp > 1 and engine.older_than(0, 3, 6):
            raise KvcalcError(
                f"{engine.title} predates --enable-dp-attention (read in SGLang 0.3.6, not in 0.3.5)",
                "engine",
                "sglang@0.3.6 or later",
            )


LinkKind = str  # 'nvlink', 'pcie' or 'network'


def group_link_kind(gpu: GPUSpec, size: int) -> LinkKind:
    """The link a collective among ``size`` GPUs placed together crosses: NVLink when they fit the
    scale-up domain, PCIe when they fit a node without one, the network otherwise."""
    node = node_of(gpu)
    if size <= 1:
        return "nvlink" if gpu.interconnect_bytes_per_s else "pcie"
    if gpu.interconnect_bytes_per_s and size <= node.nvlink_domain:
        return "nvlink"
    if size <= node.gpus_per_node:
        return "pcie"
    return "network"


SCALE_UP_NAMES = {"NVIDIA": "NVLink", "AMD": "Infinity Fabric", "Google": "ICI", "Intel": "RoCE"}
"""What each vendor calls the links inside its scale-up domain, for the text: the 'nvlink' kind is the
spec's interconnect whoever made it (AMD's Infinity Fabric, Google's ICI, Gaudi 3's on-chip RoCE ports)."""


def kind_said(kind: str, fabric: str) -> str:
    """How the text names a link ``kind`` ('nvlink', 'pcie' or 'network'), the scale-up links being
    called ``fabric``."""
    return fabric if kind == "nvlink" else "PCIe" if kind == "pcie" else "the network"


def link_name(gpu: GPUSpec, kind: str) -> str:
    """How the text names a link ``kind`` on ``gpu``: its vendor's scale-up fabric, PCIe, or the network."""
    return kind_said(kind, SCALE_UP_NAMES.get(gpu.vendor, "the scale-up links"))


@record(frozen=True)
class Placement:
    """A shape laid on nodes, stage after stage, each stage's DP ranks side by side."""

    shape: Shape
    node: NodeSpec
    nodes: int
    """Servers the shape occupies (a partial last one counts)."""
    partial_node: bool
    """The shape leaves part of a server unused (fewer GPUs than a server, or not a multiple)."""
    tp_link: LinkKind
    """What a TP all-reduce crosses."""
    stage_link: LinkKind
    """What a collective over a whole stage (the MoE gather / all-to-all across DP ranks) crosses."""
    pp_network_handoffs: int
    """PP hand-offs between stages on different servers (over the network)."""
    fabric: str = "NVLink"
    """The name of the GPU's scale-up links (link_name), for the text."""

    def link_said(self, kind: LinkKind) -> str:
        """A link kind as the text names it on this placement's GPU."""
        return kind_said(kind, self.fabric)

    def describe(self) -> str:
        n = self.shape.gpus
        per = self.node.gpus_per_node
        where = (
            f"{n} of one {per}-GPU node"
            if n < per
            else f"{self.nodes} whole {per}-GPU node{'s' if self.nodes > 1 else ''}"
            if not self.partial_node
            else f"{n} GPUs on {self.nodes} {per}-GPU nodes (the last one partial)"
        )
        bits = [where]
        if self.shape.tp > 1:
            bits.append(f"TP over {self.link_said(self.tp_link)}")
        if self.shape.dp > 1 or self.shape.ep > 1:
            bits.append(f"DP/EP over {self.link_said(self.stage_link)}")
        if self.shape.pp > 1:
            bits.append(f"{self.pp_network_handoffs} of {self.shape.pp - 1} PP hand-offs over the network")
        return "; ".join(bits)


def place(gpu: GPUSpec, shape: Shape) -> Placement:
    node = node_of(gpu)
    per = node.gpus_per_node
    n = shape.gpus
    nodes = math.ceil(n / per)
    stage = shape.stage_gpus
    # Stage i occupies GPUs [i*stage, (i+1)*stage): a hand-off crosses when the two stages start on
    # different servers' domains.
    domain = node.nvlink_domain if gpu.interconnect_bytes_per_s else 1
    span = max(per, domain)
    net = sum(1 for i in range(1, shape.pp) if (i * stage) // span != ((i - 1) * stage) // span or stage > span)
    return Placement(
        shape=shape,
        node=node,
        nodes=nodes,
        partial_node=n % per != 0,
        tp_link=group_link_kind(gpu, shape.tp),
        stage_link=group_link_kind(gpu, stage),
        pp_network_handoffs=net,
        fabric=link_name(gpu, "nvlink"),
    )


TP_SIZES = (1, 2, 4, 8)
PP_SIZES = tuple(range(1, 17))
DP_SIZES = (1, 2, 4, 8, 16, 32, 64)


def fits_nodes(gpu: GPUSpec, gpus: int) -> bool:
    """Whether a deployment of ``gpus`` GPUs takes whole servers, or a share of one that divides it
    (1, 2 or 4 of 8), as servers are rented and filled."""
    per = node_of(gpu).gpus_per_node
    return gpus % per == 0 if gpus >= per else per % gpus == 0


def candidate_shapes(
    model: ModelSpec,
    gpu: GPUSpec,
    engine: Engine,
    max_gpus: int,
    tp_sizes: tuple[int, ...] = TP_SIZES,
    pp_sizes: tuple[int, ...] = PP_SIZES,
    dp_sizes: tuple[int, ...] | None = None,
    cross_node_tp: bool = False,
    ep_modes: tuple[bool, ...] = (True,),
) -> list[Shape]:
    """The shapes people deploy on this GPU, each laid on whole servers (or a share of one):

    - TP inside the NVLink domain, or inside a server where GPUs talk over PCIe (``cross_node_tp``
      lifts it);
    - PP only across servers: a stage fills at least one server's TP (or the widest TP the model
      takes there), since inside one TP is the cheaper split;
    - for mixture-of-experts models on engines with it, data-parallel attention with expert
      parallelism over every GPU of a stage (DP x TP = EP), inside or across servers (``ep_modes``:
      (True,) EP on, as DP attention is deployed; (False,) the experts split by width instead; both).
    """
    node = node_of(gpu)
    inner = max(node.nvlink_domain if gpu.interconnect_bytes_per_s else 1, node.gpus_per_node)
    moe_dp = model.moe is not None and engine.name in ("vllm", "sglang")
    dps = dp_sizes if dp_sizes is not None else (DP_SIZES if moe_dp else (1,))
    valid_tp = []
    for tp in tp_sizes:
        try:
            check_parallel(model, tp, 1)
        except KvcalcError:
            continue
        if tp <= inner or cross_node_tp:
            valid_tp.append(tp)
    widest = max((t for t in valid_tp if t <= node.gpus_per_node), default=1)
    out: list[Shape] = []
    for tp in valid_tp:
        for dp in dps:
            if dp > 1 and not moe_dp:
                continue
            eps = sorted({dp * tp if on else 1 for on in ep_modes}) if dp > 1 else [1]
            for ep in eps:
                if model.moe and ep > model.moe.num_experts:
                    continue
                out += _stages(model, gpu, Shape(tp, 1, dp, ep), node.gpus_per_node, widest, max_gpus, pp_sizes)
    return out


def _stages(
    model: ModelSpec, gpu: GPUSpec, base: Shape, per: int, widest: int, max_gpus: int, pp_sizes: tuple[int, ...]
) -> list[Shape]:
    """``base`` with each pipeline depth that fits: PP only where a stage fills a server (or TP is
    already as wide as the model takes there), on whole servers or a share of one."""
    out = []
    for pp in pp_sizes:
        s = Shape(base.tp, pp, base.dp, base.ep)
        if s.gpus > max_gpus or pp > model.num_layers:
            continue
        if pp > 1 and s.stage_gpus < per and not (s.dp == 1 and s.tp == widest):
            continue  # PP inside a server: TP there is the cheaper split
        if fits_nodes(gpu, s.gpus):
            out.append(s)
    return out
