"""Weights: the bytes a GPU holds (resident) and the bytes a decode step reads (streamed).

The bytes of each parameter role (embeddings, attention, MLP, experts, routers, norms, ...) follow
the checkpoint's format: its quantization_config for the roles it quantizes, 16 bits for the rest
(float32 checkpoints load at 16 bits), and a ``--weight-dtype`` override for all of them. Under
tensor parallelism the projections and the vocabulary split over the ranks; routers, norms and the
matrices an engine replicates (DeepSeek's q and kv down-projections) sit whole on every rank.
"""

from __future__ import annotations

import math
from dataclasses import field
from fractions import Fraction
from math import ceil
from typing import Any

from kvcalc._record import record
from kvcalc.engine.alloc import PPSplit
from kvcalc.specs.dtypes import weight_bits, weight_bytes
from kvcalc.specs.layers import MLA
from kvcalc.specs.model import SPLIT_ROLES, ModelSpec, ParamRoles, Quantization

LAYER_ROLES = ("attn", "mlp", "shared_experts", "experts", "router", "norms", "replicated")


def roles_of(model: ModelSpec) -> ParamRoles:
    """The model's parameter roles; a spec without them has every non-expert parameter split over ranks."""
    if model.params is not None:
        return model.params
    embed = model.embedding_params
    lm = 0 if model.tie_word_embeddings else embed
    rest = max(model.params_total - model.expert_params - embed - lm, 0)
    return ParamRoles(embed=embed, lm_head=lm, attn=rest)


def quantized_bytes(q: Quantization, n: int, hidden: int) -> int:
    """Bytes of ``n`` parameters stored as ``q.method``, scales included."""
    g = q.group_size
    if q.method == "fp8-block":
        return n + ceil(Fraction(n, g * g)) * 4  # an fp32 scale per g x g block
    if q.method in ("fp8-channel", "int8-channel"):
        return n + ceil(Fraction(n, hidden)) * 4  # an fp32 scale per output row
    if q.method == "fp8-tensor":
        return n
    if q.method in ("awq", "gptq"):
        return ceil(Fraction(n, 2)) + ceil(Fraction(n, g)) * 5 // 2  # 4-bit weights; fp16 scale + 4-bit zero per group
    if q.method == "gptq-int8":
        return n + ceil(Fraction(n, g)) * 3  # 8-bit weights; fp16 scale + 8-bit zero (qzeros packs 4 an int32) per group
    if q.method == "mxfp4":
        return ceil(Fraction(n * 17, 32))  # 4-bit elements + an 8-bit exponent per 32
    if q.method == "nvfp4":
        return ceil(Fraction(n * 9, 16))  # 4-bit elements + an fp8 scale per 16
    raise ValueError(q.method)


@record(frozen=True)
class WeightFormats:
    """The formats a model's weights are counted in: dense parameters and routed experts."""

    dense: str
    experts: str
    overridden: bool
    quantization: Quantization | None = None

    @classmethod
    def of(cls, model: ModelSpec, override: str | None = None) -> WeightFormats:
        if override:
            layout = flag_layout(model, override)
            if layout is None:
                return cls(override, override, True)
            return cls("bf16", override, True, layout)
        experts = (model.moe.expert_weight_dtype if model.moe else None) or model.weight_dtype
        return cls(model.weight_dtype, experts, False, model.quantization)

    def describe(self) -> str:
        if self.overridden and self.quantization:
            q = self.quantization
            return (
                f"--weight-dtype {self.experts} laid out as a {q.source}: {', '.join(q.roles)} as {q.method}, the "
                "embeddings, LM head, norms, routers and any vision tower in bf16 (a guessed layout: the checkpoint's config.json gives "
                "its own)"
            )
        if self.overridden:
            return f"every parameter as {self.dense} (--weight-dtype)"
        if self.quantization:
            q = self.quantization
            alone = " (the weights alone: W8A16)" if q.weight_only else ""
            return f"{', '.join(q.roles)} as {q.method}{alone}, the rest {self.dense}"
        return self.dense if self.experts == self.dense else f"{self.dense}, experts {self.experts}"


# What a quantized weight format given by flag stores quantized, as the engines' quantization methods
# lay a checkpoint out: the linear layers (attention projections, MLPs, experts, DeepSeek's replicated
# down-projections) in the format, the embeddings, LM head, norms and routers in 16 bits
# (vLLM 0.33: model_executor/layers/quantization/{fp8,gptq,awq,compressed_tensors,modelopt}.py skip
# VocabParallelEmbedding, ParallelLMHead and the gate unless a config lists them); mxfp4 as OpenAI's
# gpt-oss checkpoints store it, the routed experts alone (quantization/mxfp4.py quantizes FusedMoE).
FLAG_LAYOUTS: dict[str, tuple[str, int, str]] = {
    "fp8": ("fp8-channel", 128, "fp8 checkpoint (a scale per output row)"),
    "int8": ("int8-channel", 128, "W8A8 int8 checkpoint (a scale per output row)"),
    "int8-w8a16": ("gptq-int8", 128, "8-bit GPTQ checkpoint (W8A16, group 128)"),
    "int4": ("gptq", 128, "GPTQ/AWQ int4 checkpoint (group 128)"),
    "fp4": ("nvfp4", 16, "NVFP4 checkpoint (an fp8 scale per 16)"),
    "mxfp4": ("mxfp4", 32, "MXFP4 checkpoint (gpt-oss: the experts alone)"),
}
LINEAR_ROLES = ("attn", "mlp", "shared_experts", "experts", "replicated")

# The weight format a start-up log's quantization method stores the linear layers in, as --weight-dtype
# names it: vLLM's config line (quantization=..., vllm/config/model.py) and SGLang's server args name the
# method (vLLM 0.19: model_executor/layers/quantization/__init__.py QUANTIZATION_METHODS; SGLang's own
# w8a8_int8 and w8a8_fp8). GPTQ and AWQ as 4-bit, as they are almost always published (an 8-bit GPTQ
# checkpoint is not told apart); bitsandbytes, GGUF and experts-only methods are not read.
LOGGED_METHODS: dict[str, str] = {
    "fp8": "fp8",
    "fbgemm_fp8": "fp8",
    "ptpc_fp8": "fp8",
    "modelopt": "fp8",
    "w8a8_fp8": "fp8",
    "w8a8_int8": "int8",
    "modelopt_fp4": "fp4",
    "mxfp4": "mxfp4",
    "awq": "int4",
    "awq_marlin": "int4",
    "gptq": "int4",
    "gptq_marlin": "int4",
}
# compressed-tensors by the scheme its layers log ("Using scheme: CompressedTensorsW8A8Int8 for [...]",
# vLLM 0.19 compressed_tensors.py): WNA16 as 4-bit, as for GPTQ.
LOGGED_SCHEMES: dict[str, str] = {
    "CompressedTensorsW8A8Int8": "int8",
    "CompressedTensorsW8A8Fp8": "fp8",
    "CompressedTensorsW8A16Fp8": "fp8",
    "CompressedTensorsWNA16": "int4",
    "CompressedTensorsW4A16Fp4": "fp4",
    "CompressedTensorsW4A4Fp4": "fp4",
}


def logged_weight_dtype(method: str | None, scheme: str | None = None) -> str | None:
    """The --weight-dtype a log's quantization ``method`` (and, for compressed-tensors, its layers'
    ``scheme``) stands for; None where the log names none kvcalc reads."""
    if method is None:
        return None
    if method == "compressed-tensors":
        return LOGGED_SCHEMES.get(scheme or "")
    return LOGGED_METHODS.get(method.lower())


def flag_layout(model: ModelSpec, dtype: str) -> Quantization | None:
    """The per-role layout a quantized ``--weight-dtype`` stands for (None: a 16- or 32-bit format,
    every parameter in it)."""
    from kvcalc.specs.dtypes import normalize_weight_dtype

    key = normalize_weight_dtype(dtype)
    if key not in FLAG_LAYOUTS:
        return None
    method, group, words = FLAG_LAYOUTS[key]
    roles: tuple[str, ...] = LINEAR_ROLES
    if key == "mxfp4" and model.moe:
        roles = ("experts",)
    elif key == "fp4" and any(isinstance(k, MLA) for k in model.kinds()):
        # ModelOpt's DeepSeek recipe leaves MLA unquantized ("*attn*" disabled unless --mla_quant;
        # TensorRT-Model-Optimizer examples/deepseek/ptq.py), the replicated q and kv down-projections
        # and the sparse-attention indexer with it. NVIDIA's DeepSeek-V3.2-NVFP4 loads 48.62 GiB a GPU at
        # TP 8 under vLLM 0.18 (vllm-memory-estimator's records); this layout counts 49.45, every linear
        # layer in fp4 45.57. The 0.83 GiB left is about the indexer's 0.85 B parameters at 8 bits
        # rather than 16; not established.
        roles = ("mlp", "shared_experts", "experts")
        words = "NVFP4 checkpoint (an fp8 scale per 16; MLA in 16 bits, as ModelOpt's DeepSeek recipe leaves it)"
    # 8-bit GPTQ multiplies at 16 bits (Marlin), the weights alone quantized.
    return Quantization(method=method, roles=list(roles), group_size=group, source=words, weight_only=key == "int8-w8a16")


def role_bytes(model: ModelSpec, override: str | None = None) -> dict[str, int]:
    """Bytes of each role, the routed experts included, for the whole model: as the checkpoint's
    safetensors headers give them where kvcalc read them (tensors it cannot place count with the
    attention, split over ranks), else counted from the config."""
    ck = model.checkpoint
    if override is None and ck is not None and ck.role_bytes:
        out = {r: ck.role_bytes.get(r, 0) for r in (*SPLIT_ROLES, "router", "norms", "replicated", "experts")}
        out["attn"] += ck.role_bytes.get("other", 0)
        return out
    out = _counted_role_bytes(model, override)
    if override is None and ck is not None and ck.total_bytes:
        # Only the index's total: the difference from the count goes with the attention (split).
        stored = ck.total_bytes // 2 if model.checkpoint_dtype == "fp32" else ck.total_bytes
        diff = stored - sum(out.values()) - vision_bytes(model)
        out["attn"] = max(out["attn"] + diff, 0)
    return out


def _counted_role_bytes(model: ModelSpec, override: str | None = None) -> dict[str, int]:
    f = WeightFormats.of(model, override)
    roles = roles_of(model)
    counts = {r: getattr(roles, r) for r in (*SPLIT_ROLES, "router", "norms", "replicated")}
    counts["experts"] = model.expert_params
    out: dict[str, int] = {}
    q = f.quantization
    for r, n in counts.items():
        if q is not None and r in q.roles and n:
            kept = n * q.unquantized_layers // model.num_layers if q.unquantized_layers else 0
            out[r] = quantized_bytes(q, n - kept, model.hidden_size) + weight_bytes(kept, f.dense)
        elif r == "experts":
            out[r] = weight_bytes(n, f.experts)
        else:
            out[r] = weight_bytes(n, f.dense)
    return out


def resident_bytes(model: ModelSpec, dtype: str | None = None) -> int:
    """Bytes of all the language model's parameters as loaded."""
    return sum(role_bytes(model, dtype).values())


def vision_bytes(model: ModelSpec, dtype: str | None = None) -> int:
    """The vision tower's bytes. A quantized weight format given by flag leaves it in the model's own
    16 bits, as quantized checkpoints of vision-language models leave it (Qwen/Qwen2.5-VL-7B-Instruct-AWQ's
    quantization_config: "modules_to_not_convert": ["visual"]); a 16- or 32-bit one loads it so too."""
    ck = model.checkpoint
    if dtype is None and ck is not None and ck.role_bytes:
        return ck.role_bytes.get("vision", 0)
    if dtype is not None and flag_layout(model, dtype) is not None:
        dtype = None
    return weight_bytes(model.vision_params, dtype or model.weight_dtype)


MROPE_ARCHITECTURES = frozenset(
    {"qwen2_vl", "qwen2_5_vl", "qwen3_vl_text", "qwen3_vl_moe_text", "qwen3_5_text", "qwen3_5_moe_text"}
)
"""Models (by the model_type a spec records: a nested text_config's own) whose config's rope_scaling
carries mrope_section, which vLLM gives its multimodal rotary embedding
(model_executor/layers/rotary_embedding/mrope.py)."""


def rope_cache_factor(model: ModelSpec) -> int:
    """How many times max_position_embeddings vLLM's rotary cache holds: 4 for a multimodal rotary
    embedding (MROPE_ARCHITECTURES), else 1."""
    return 4 if model.architecture in MROPE_ARCHITECTURES else 1


def rope_cache_bytes(model: ModelSpec, engine: str = "vllm") -> int:
    """vLLM's rotary cos/sin cache: max_position_embeddings x rotary dims x 2 bytes, once per GPU
    (Llama-3.1-8B: 131,072 x 128 x 2 = 33.5 MB, the gap between its 14.96 GiB of parameters and the
    14.99 GiB vLLM logs). Multimodal rotary embeddings cache four times the positions
    ("cache_max_position_num = max_position_embeddings * 4", MRotaryEmbedding in
    rotary_embedding.py, 0.9.0.1, and rotary_embedding/mrope.py, 0.11.0): Qwen2.5-VL's 128,000
    positions x 4 x 128 x 2 B = 131,072,000 B. A spec's rope_caches lists the caches where they differ
    (Gemma-3-4B: a local cache of 131,072 positions and a global one of 8 x 131,072 for its linear
    scaling, x 256 x 2 B = 603,979,776 B, the 0.5 GiB its weights log above the parameters). A partial
    rotary embedding caches int(head_dim x partial_rotary_factor) dimensions (get_rope, 0.22.1): Qwen3-Next's
    262,144 x 64 x 2 B. SGLang builds its caches as vLLM does (layers/rotary_embedding.py, 0.5.6 and 0.5.9)
    but for Gemma 3."""
    if engine == "sglang" and model.architecture in ("gemma3", "gemma3_text"):
        # SGLang 0.5.6's Gemma 3 (models/gemma3_causal.py) computes its rotary angles from inv_freq
        # (Gemma3RotaryEmbedding, as transformers does): no cos/sin cache.
        return 0
    if engine == "trtllm":
        caches = [float(rope_cache_factor(model))]  # the scaled and per-layer caches read from vLLM and SGLang only
    else:
        caches = model.rope_caches or [float(rope_cache_factor(model))]
    positions = sum(round(model.max_position_embeddings * x) for x in caches)
    # The dimensions a position holds: int(head_dim x partial_rotary_factor), as get_rope takes them.
    dims = int(max((k.rope_dims for k in model.kinds()), default=0) * model.partial_rotary_factor)
    return positions * dims * 2


def mla_absorbed_bytes(model: ModelSpec, dtype: str | None, tp: int, pp: int = 1, pp_split: PPSplit = "before-last") -> int:
    """vLLM's 16-bit copies of a quantized kv_b_proj for MLA's absorbed decode: it has no quantized
    batched matmul, so it dequantizes the projection and keeps W_UK_T and W_UV, views of one kv_lora_rank
    x local heads x (qk_nope + v) tensor in 16 bits, beside the quantized weight the prefill uses
    (v1/attention/backends/mla/common.py process_weights_after_loading, 0.11.0 and 0.14.0;
    model_executor/layers/attention/mla_attention.py, 0.19.0 and 0.33.0). A 16-bit kv_b_proj is only
    viewed: 0. DeepSeek-V3's fp8 checkpoint at TP 8: 61 x 512 x 16 x 256 x 2 B = 0.24 GiB a GPU. With
    pipeline parallelism, the stage with the most MLA layers."""
    f = WeightFormats.of(model, dtype)
    q = f.quantization
    quantized = (q is not None and "attn" in q.roles) or weight_bits(f.dense) < 16
    if not quantized:
        return 0
    from kvcalc.engine.kv import stages

    def layer_bytes(name: str) -> int:
        k = model.layer_kinds[name]
        if not isinstance(k, MLA):
            return 0
        return k.kv_lora_rank * -(-k.num_attention_heads // tp) * (k.qk_nope_head_dim + k.v_head_dim) * 2

    return max(sum(layer_bytes(name) for name in stage) for stage in stages(model, pp, pp_split))


@record(frozen=True)
class MLAMaterialized:
    """vLLM 0.7.1 to 0.7.3's materialized MLA decode weights (VLLM_MLA_PERFORM_MATRIX_ABSORPTION, on by
    default): each MLA layer multiplies W_UK into the query's up-projection (W_Q_UK, q_lora_rank x local
    heads x kv_lora_rank) and W_UV into o_proj (W_UV_O, local heads x kv_lora_rank x hidden), keeps the
    query's rope columns apart (W_QR, in 16 bits), and a decode token runs through these three in place
    of q_b_proj, kv_b_proj and o_proj, which stay for prompts. An fp8 checkpoint's are requantized to fp8
    with its own scale groups (an fp32 scale per 128 x 128 block of a block-scaled one); any other is kept
    in 16 bits, and a quantized kv_b_proj's 16-bit dequantized copy stays referenced (W_UK and W_UV are
    views of it). vllm/attention/backends/mla/utils.py MLACommonImpl.process_weights_after_loading,
    _q_proj_and_k_up_proj and _v_up_proj_and_o_proj, and envs.py, read in 0.7.1, 0.7.2 and 0.7.3; 0.8.0
    multiplies kv_b_proj's halves per head instead (vllm-project/vllm#14770, "MLA get rid of
    materialization", which says the materialized weights cost more memory and more FLOPs)."""

    resident_bytes: int
    """What the materialized weights add on the GPU holding the most MLA layers (with PP, its stage's)."""
    decode_read_bytes: int
    """What a decode-only step reads on one rank beyond kvcalc's streamed weights: the three materialized
    matrices less q_b_proj, kv_b_proj and o_proj, over every MLA layer."""
    absorbed_read_bytes: int
    """The three materialized matrices alone, over every MLA layer: what a step that carries prompt tokens
    and decodes reads beyond the streamed weights (the prompt's tokens run through the originals)."""
    decode_flops_per_token: int
    """FLOPs one decode token adds on one rank, over every MLA layer (the matrices' products less the
    originals' and the two per-head multiplies the streamed FLOPs count)."""


def mla_materialized(
    model: ModelSpec, dtype: str | None, tp: int, pp: int = 1, pp_split: PPSplit = "before-last"
) -> MLAMaterialized:
    """The weights vLLM 0.7.1-0.7.3 materialize for MLA decode (MLAMaterialized), at ``tp`` and ``pp``.
    DeepSeek-V3's fp8 checkpoint at TP 8, a layer: W_Q_UK 1,536 x 16 x 512 fp8 with 12 x 64 scales,
    W_QR 1,536 x 16 x 64 x 2 B, W_UV_O 16 x 512 x 7,168 fp8 with 64 x 56 scales, and the 512 x 16 x 256
    x 2 B copy of kv_b_proj: 78,660,608 B."""
    f = WeightFormats.of(model, dtype)
    q = f.quantization
    attn_q = q if q is not None and "attn" in q.roles else None
    fp8 = attn_q.method.startswith("fp8") if attn_q is not None else f.dense == "fp8"
    quantized = attn_q is not None or weight_bits(f.dense) < 16
    H = model.hidden_size

    def stored(n: int) -> int:
        # A checkpoint matrix of n parameters as kvcalc counts the attention role.
        return quantized_bytes(attn_q, n, H) if attn_q is not None else weight_bytes(n, f.dense)

    def requant(rows: int, cols: int) -> int:
        # vLLM's scaled_quantize at the projection's group shape: fp32 scales per block, per output
        # column, or one for the tensor.
        if not fp8:
            return rows * cols * 2
        if attn_q is not None and attn_q.method == "fp8-block":
            g = attn_q.group_size
            return rows * cols + -(-rows // g) * -(-cols // g) * 4
        if attn_q is not None and attn_q.method == "fp8-channel":
            return rows * cols + cols * 4
        return rows * cols + 4

    per: dict[str, tuple[int, int, int, int]] = {}
    for name, k in model.layer_kinds.items():
        if not isinstance(k, MLA):
            continue
        n = -(-k.num_attention_heads // tp)
        lq = k.q_lora_rank or H
        r, rope, nope, v = k.kv_lora_rank, k.qk_rope_head_dim, k.qk_nope_head_dim, k.v_head_dim
        absorbed = requant(lq, n * r) + lq * n * rope * 2 + requant(n * r, H)
        copy = r * n * (nope + v) * 2 if quantized else 0
        originals = stored(lq * n * (nope + rope)) + stored(r * n * (nope + v)) + stored(n * v * H)
        flops = 2 * n * (lq * r + lq * rope + r * H - lq * (nope + rope) - r * (nope + v) - v * H)
        per[name] = (absorbed + copy, absorbed - originals, absorbed, flops)
    if not per:
        return MLAMaterialized(0, 0, 0, 0)
    from kvcalc.engine.kv import stages

    counts = model.layer_counts()
    resident = max(sum(per[x][0] for x in stage if x in per) for stage in stages(model, pp, pp_split))
    return MLAMaterialized(
        resident,
        sum(n * per[x][1] for x, n in counts.items() if x in per),
        sum(n * per[x][2] for x, n in counts.items() if x in per),
        sum(n * per[x][3] for x, n in counts.items() if x in per),
    )


@record(frozen=True)
class Weights:
    total_bytes: int
    per_gpu_bytes: int
    dtype: str
    expert_dtype: str | None
    note: str
    roles: dict[str, int] = field(default_factory=dict)
    """Bytes of each role on the most loaded GPU."""
    vision_bytes: int = 0
    """Of per_gpu_bytes, the vision tower's share."""


def moe_layer_mask(model: ModelSpec) -> list[bool] | None:
    """Which layers hold routed experts, by index, as the engines' model code decides from the config:
    from first_k_dense_replace on, every moe_layer_freq-th (DeepSeek-V2/V3, Kimi-K2, GLM-4.x, GLM-5:
    vllm/model_executor/models/deepseek_v2.py and glm4_moe.py), every expert_layer_period-th from
    expert_layer_offset (Jamba), every interleave_moe_layer_step-th (Llama 4), every
    decoder_sparse_step-th but mlp_only_layers (Qwen MoE), else every layer. None where the rule does
    not give the spec's num_moe_layers (the stages then share the experts by their layer counts)."""
    if model.moe is None:
        return None
    c = model.source.config
    n = model.num_layers

    def count(key: str, default: int, least: int = 1) -> int | None:
        v = c.get(key, default)
        v = default if v is None else v
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= least else None

    if "first_k_dense_replace" in c:
        k, freq = count("first_k_dense_replace", 0, 0), count("moe_layer_freq", 1)
        mask = [i >= k and i % freq == 0 for i in range(n)] if k is not None and freq else None
    elif "expert_layer_period" in c:
        period, offset = count("expert_layer_period", 1), count("expert_layer_offset", 0, 0)
        mask = [i % period == offset for i in range(n)] if period and offset is not None else None
    elif "interleave_moe_layer_step" in c:
        step = count("interleave_moe_layer_step", 1)
        mask = [(i + 1) % step == 0 for i in range(n)] if step else None
    elif "decoder_sparse_step" in c:
        every, dense = count("decoder_sparse_step", 1), c.get("mlp_only_layers") or []
        if every and isinstance(dense, list):
            mask = [i not in dense and (i + 1) % every == 0 for i in range(n)]
        else:
            mask = None
    else:
        mask = [True] * n
    return mask if mask is not None and sum(mask) == model.moe.num_moe_layers else None


MOE_LAYER_ROLES = ("experts", "shared_experts", "router")
"""The roles only an MoE layer holds (its dense MLP is the 'mlp' role of the layers without experts)."""


def _stage_layers(num_layers: int, pp: int, split: PPSplit = "before-last") -> list[int]:
    from kvcalc.engine.kv import pp_partition

    return pp_partition(num_layers, pp, split)


def expert_share(model: ModelSpec, tp: int, dp: int = 1, ep: int = 1) -> Fraction:
    """The share of the routed experts the most loaded GPU of a stage holds: with expert
    parallelism ceil(E / ep) whole experts of E (vLLM's determine_expert_map gives the remainder to
    the first ranks, vllm/model_executor/layers/fused_moe/layer.py, 0.33.0), else 1 / (dp x tp) of
    every expert (split by width over the flattened DP x TP group)."""
    if ep > 1 and model.moe:
        return Fraction(-(-model.moe.num_experts // ep), model.moe.num_experts)
    return Fraction(1, tp * dp)


def weights(
    model: ModelSpec,
    weight_dtype: str | None = None,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    ep: int = 1,
    splits: dict[str, int] | None = None,
    pp_split: PPSplit = "before-last",
) -> Weights:
    """Resident weight bytes in total and on the most loaded GPU: split roles over tp ranks, routers,
    norms and replicated matrices whole on each; layers split over pp stages as the engine splits them
    (``pp_split``, kv.pp_partition), the
    embedding on the first stage and the LM head on the last (a tied LM head is a copy there). With
    data-parallel attention (dp > 1) every DP rank holds the attention and dense parts at its own
    tp, and the routed experts spread over all dp x tp GPUs of a stage (:func:`expert_share`);
    ``splits`` overrides the ways a role splits where an engine differs
    (kvcalc.engine.deployment.role_splits)."""
    rb = role_bytes(model, weight_dtype)
    vis = vision_bytes(model, weight_dtype)
    total = sum(rb.values())
    tied = model.tie_word_embeddings
    experts = expert_share(model, tp, dp, ep)

    ways = splits or {}

    def per_rank(r: str) -> Fraction:
        if r == "experts":
            return rb[r] * experts
        if r in ways:
            return Fraction(rb[r], ways[r])
        return Fraction(rb[r], tp) if r in SPLIT_ROLES else Fraction(rb[r])

    parts = _stage_layers(model.num_layers, pp, pp_split)
    # A stage's share of each role: its layers' share, but for the roles of the MoE layers (and the dense
    # MLP of the others), where the model says which layers those are.
    mask = moe_layer_mask(model) if pp > 1 else None
    moe_total = sum(mask) if mask else 0
    best: Fraction = Fraction(-1)
    best_roles: dict[str, Fraction] = {}
    start = 0
    for i, n in enumerate(parts):
        share = Fraction(n, model.num_layers)
        roles: dict[str, Fraction] = {r: per_rank(r) * share for r in LAYER_ROLES}
        if mask:
            moe_here = sum(mask[start : start + n])
            for r in MOE_LAYER_ROLES:
                roles[r] = per_rank(r) * Fraction(moe_here, moe_total)
            dense_total = model.num_layers - moe_total
            if dense_total:
                roles["mlp"] = per_rank("mlp") * Fraction(n - moe_here, dense_total)
        start += n
        if i == 0:
            roles["embed"] = per_rank("embed")
            roles["vision"] = Fraction(vis, tp)
        if i == len(parts) - 1:
            roles["lm_head"] = per_rank("embed") if tied and pp > 1 else per_rank("lm_head")
        s = sum(roles.values(), Fraction(0))
        if s > best:
            best, best_roles = s, roles
    note = "split over tp ranks (routers, norms and replicated matrices whole on each), layers over pp stages"
    if dp > 1 or ep > 1:
        note += f"; the routed experts {'by expert' if ep > 1 else 'by width'} over the {tp * dp} GPUs of a stage" + (
            f" (DP {dp}: attention and dense parts whole on every DP rank)" if dp > 1 else ""
        )
    return Weights(
        total + vis,
        ceil(best),
        weight_dtype or model.weight_dtype,
        None if weight_dtype else (model.moe.expert_weight_dtype if model.moe else None),
        note,
        {r: ceil(v) for r, v in best_roles.items() if v},
        ceil(best_roles.get("vision", 0)),
    )


def expected_experts(E: int, k: int, b: Any) -> Any:
    """Expected distinct experts a batch of b tokens routes to in one MoE layer (uniform routing):
    E x (1 - (1 - k/E)^b). 1 token: k experts; many: tends to all E."""
    if isinstance(b, (int, float)):
        return E * (1.0 - (1.0 - k / E) ** b)
    import numpy as np

    return E * (1.0 - np.power(1.0 - k / E, b))


def busiest_rank_experts(E: int, k: int, b: float, ranks: int) -> float:
    """Expected distinct experts the busiest of ``ranks`` expert-parallel ranks reads in one MoE
    layer for a batch of b tokens (uniform routing). Each expert is hit with probability
    p = 1 - (1 - k/E)^b; a rank holding n experts hits Binomial(n, p) of them (experts taken as
    independent: exact in the mean, within 1% of a simulation of top-k routing at E = 256, k = 8,
    8 ranks); the largest of the ranks' counts has expectation sum over j >= 1 of
    1 - P(every rank < j). Where ranks do not divide E, the first E mod ranks ranks hold one expert
    more (vllm/model_executor/layers/fused_moe/layer.py, determine_expert_map; SGLang refuses such a
    split)."""
    if ranks <= 1:
        return float(expected_experts(E, k, b))
    p = 1.0 - (1.0 - k / E) ** b
    n, big = divmod(E, ranks)
    q = 1.0 - p

    def cdfs(m: int) -> list[float]:
        out, acc = [], 0.0
        for j in range(m + 1):
            acc += math.comb(m, j) * p**j * q ** (m - j)
            out.append(min(acc, 1.0))
        return out

    small_cdf = cdfs(n)
    big_cdf = cdfs(n + 1) if big else small_cdf
    total = 0.0
    for j in range(1, n + (2 if big else 1)):
        below = (small_cdf[j - 1] if j - 1 <= n else 1.0) ** (ranks - big) * big_cdf[j - 1] ** big
        total += 1.0 - below
    return total


@record(frozen=True)
class StreamedWeights:
    """Bytes a decode step reads on one rank: every layer's matrices and the LM head, not the input
    embedding table (a step touches only b of its rows)."""

    split_bytes: int
    """Streamed bytes split over tp ranks (attention, MLPs, shared experts, the LM head)."""
    full_bytes: int
    """Streamed bytes every rank reads whole (routers, norms, replicated matrices)."""
    expert_bytes_each: Fraction
    """One routed expert of one layer."""
    moe_layers: int
    num_experts: int
    experts_per_tok: int
    embed_row_bytes: int
    resident_bytes: int

    def bytes_read(self, batch: Any, tp: int = 1, expert_split: int | None = None, expert_batch: Any = None) -> Any:
        """Bytes of weights one decode step reads on one rank, for an int batch or a numpy array of
        them. Dense models: exact, ceil((split bytes + b embedding rows) / tp) + whole bytes. MoE: the
        expected distinct experts, rounded to whole bytes (half to even). With data-parallel
        attention the experts see every DP rank's tokens (``expert_batch``) and spread over
        ``expert_split`` GPUs (default: the batch and tp)."""
        if not self.moe_layers:
            # numpy int64 holds it for any batch up to 2^24.
            return -(-(self.split_bytes + self.embed_row_bytes * batch) // tp) + self.full_bytes
        eb = batch if expert_batch is None else expert_batch
        experts = self.moe_layers * expected_experts(self.num_experts, self.experts_per_tok, eb) * float(self.expert_bytes_each)
        if expert_split in (None, tp):
            total = (self.split_bytes + self.embed_row_bytes * batch + experts) / tp + self.full_bytes
        else:
            total = (self.split_bytes + self.embed_row_bytes * batch) / tp + experts / expert_split + self.full_bytes
        if isinstance(total, float):
            return int(round(total))
        import numpy as np

        return np.rint(total)


def moe_width(model: ModelSpec) -> int:
    """One routed expert's intermediate width (moe_intermediate_size): the spec's figure, or the
    expert's parameters over its three gated projections."""
    m = model.moe
    if m is None:
        return 0
    return m.intermediate_size or max(1, m.params_per_expert // (3 * model.hidden_size))


def streamed_weights(model: ModelSpec, dtype: str | None = None) -> StreamedWeights:
    rb = role_bytes(model, dtype)
    roles = roles_of(model)
    # Tied embeddings are read as the LM head every step; untied, the input table is not streamed.
    head = rb["embed"] if model.tie_word_embeddings else rb["lm_head"]
    split = head + rb["attn"] + rb["mlp"] + rb["shared_experts"]
    m = model.moe
    f = WeightFormats.of(model, dtype)
    row = ceil(model.hidden_size * weight_bits(f.dense) / 8) if roles.embed else 0
    return StreamedWeights(
        split_bytes=split,
        full_bytes=rb["router"] + rb["norms"] + rb["replicated"],
        expert_bytes_each=Fraction(rb["experts"], m.num_moe_layers * m.num_experts) if m else Fraction(0),
        moe_layers=m.num_moe_layers if m else 0,
        num_experts=m.num_experts if m else 0,
        experts_per_tok=m.num_experts_per_tok if m else 0,
        embed_row_bytes=row,
        resident_bytes=sum(rb.values()),
    )


def active_matmul_params(model: ModelSpec) -> int:
    """Parameters one token multiplies through: active parameters less the input embedding lookup."""
    return model.params_active - (0 if model.tie_word_embeddings else model.embedding_params)
