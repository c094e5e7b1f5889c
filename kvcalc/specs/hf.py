"""Hugging Face ``config.json`` -> :class:`ModelSpec`, offline.

Each supported ``model_type`` maps its config fields onto layer kinds and counts parameters
from the architecture (embeddings, attention, MLP or experts, norms, biases), so the catalog's
figures are computed, not copied from model cards. An unknown ``model_type`` is read from the
standard fields, and every assumption made is returned as a warning.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any

from kvcalc._record import record
from kvcalc.errors import KvcalcError
from kvcalc.specs.constraints import MAX_FIELD
from kvcalc.specs.model import ROLES, VISION_ENCODERS

SUPPORTED = (
    "llama",
    "mistral",
    "gemma",
    "granite",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "qwen2_moe",
    "deepseek_v2",
    "deepseek_v3",
    "kimi_k2",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "gpt_oss",
    "falcon",
    "phi",
    "phi3",
    "llama4",
    "llama4_text",
    "qwen3_next",
    "jamba",
    "deepseek_v32",
    "glm_moe_dsa",
    "glm4_moe",
    "glm4_moe_lite",
    "minimax_m2",
    "mllama",
    "qwen2_vl",
    "qwen2_5_vl",
    "qwen3_vl",
    "qwen3_vl_moe",
    "qwen3_5",
    "qwen3_5_moe",
)

_QWEN3_5_TEXT = {
    "head_dim": 256,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "full_attention_interval": 4,
    "tie_word_embeddings": False,
}

# transformers' config-class defaults for fields the official files omit.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "vocab_size": 262208,
        "head_dim": 256,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": True,
        "num_key_value_heads": 4,
        "num_attention_heads": 8,
        "intermediate_size": 9216,
    },
    "gemma": {"tie_word_embeddings": True},
    "gemma2": {"tie_word_embeddings": True},
    "llama4_text": {"no_rope_layer_interval": 4, "attention_chunk_size": 8192, "interleave_moe_layer_step": 1},
    "falcon": {"tie_word_embeddings": True},
    # Qwen3.5's text configs (vLLM 0.22.1 transformers_utils/configs/qwen3_5.py and qwen3_5_moe.py, whose
    # full_attention_interval is read from kwargs with 4 as its default).
    "qwen3_5_text": _QWEN3_5_TEXT,
    "qwen3_5_moe_text": {**_QWEN3_5_TEXT, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512},
}


LANGUAGE_MODEL_ONLY = "language model only: the vision tower's parameters are not counted"


class _Cfg:
    """A config dict that records which fields were read (to cite them in the spec)."""

    def __init__(self, data: dict[str, Any], where: str, model_type: str):
        self.data = data
        self.where = where
        self.mt = model_type
        self.read: dict[str, Any] = {}
        self.defaults = _DEFAULTS.get(model_type, {})
        self.defaulted: list[str] = []

    def get(self, key: str, default: Any = None) -> Any:
        if key in self.data and self.data[key] is not None:
            self.read[key] = self.data[key]
            return self.data[key]
        if key in self.defaults:
            self.defaulted.append(f"{key}={self.defaults[key]!r}")
            return self.defaults[key]
        return default

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None or key in self.defaults

    def int(self, key: str, default: int | None = None, positive: bool = True) -> int:
        v = self.get(key, default)
        if v is None:
            raise KvcalcError(f"missing field {key!r}", self.where, "a positive integer")
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            else:
                raise KvcalcError(f"field {key!r} is {v!r}", self.where, "a positive integer")
        if positive and v <= 0:
            raise KvcalcError(f"field {key!r} is {v}", self.where, "a positive integer")
        if key == "num_hidden_layers" and v > 100_000:
            raise KvcalcError(f"field {key!r} is {v:,}", self.where, "at most 100,000 layers")
        if v > MAX_FIELD:
            raise KvcalcError(
                f"field {key!r} is over 2^50 (a {v.bit_length()}-bit integer)",
                self.where,
                "an integer of ordinary size (at most 2^50)",
            )
        if not positive and v < 0:
            raise KvcalcError(f"field {key!r} is {v}", self.where, "a non-negative integer")
        return v


@record
class _Build:
    """What a model_type handler fills in."""

    kinds: dict[str, dict[str, Any]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # one kind name per layer
    params: int = 0
    roles: dict[str, int] = field(default_factory=dict)
    """Parameters by role (kvcalc.specs.model.ROLES); params is their sum plus the routed experts."""
    moe: dict[str, Any] | None = None
    intermediate: int = 0
    notes: list[str] = field(default_factory=list)


def _dtype_of(c: _Cfg) -> str:
    t = str(c.get("torch_dtype") or c.get("dtype") or "bfloat16")
    return {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}.get(t, "bf16")


def _compress(order: list[str]) -> list[dict[str, Any]]:
    """Layer order -> [{repeat, pattern}] using the shortest period that tiles each run."""
    groups: list[dict[str, Any]] = []
    i = 0
    n = len(order)
    while i < n:
        best = (1, 1)  # (period, repeats)
        for p in range(1, min(12, n - i) + 1):
            pat = order[i : i + p]
            r = 1
            while order[i + r * p : i + (r + 1) * p] == pat:
                r += 1
            if r * p > best[0] * best[1] or (r * p == best[0] * best[1] and p < best[0]):
                best = (p, r)
        p, r = best
        groups.append({"repeat": r, "pattern": order[i : i + p]})
        i += p * r
    return groups


def _attn_geometry(c: _Cfg, H: int) -> tuple[int, int, int]:
    nq = c.int("num_attention_heads")
    nkv = c.int("num_key_value_heads", nq)
    hd = c.get("head_dim")
    d = c.int("head_dim") if hd is not None else H // nq
    return nq, nkv, d


def _add(b: _Build, **roles: int) -> None:
    for k, v in roles.items():
        b.roles[k] = b.roles.get(k, 0) + v


def _attn_roles(
    H: int,
    nq: int,
    nkv: int,
    d: int,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    qk_norm: bool = False,
    q_gate: bool = False,
) -> tuple[int, int]:
    """(split over TP ranks, held in full) parameters of one attention layer: the projections and
    their column-parallel biases split; the o_proj bias and q/k norms in full."""
    split = H * nq * d * (2 if q_gate else 1) + 2 * H * nkv * d + nq * d * H
    if qkv_bias:
        split += nq * d + 2 * nkv * d
    full = (H if o_bias else 0) + (2 * d if qk_norm else 0)
    return split, full


def _attn_params(H: int, nq: int, nkv: int, d: int, **opts: bool) -> int:
    """All parameters of one attention layer (what :func:`_attn_roles` splits by role)."""
    return sum(_attn_roles(H, nq, nkv, d, **opts))


def _gated_mlp(H: int, I: int) -> int:
    return 3 * H * I


def _embed(c: _Cfg, H: int, V: int, b: _Build | None = None) -> int:
    tie = bool(c.get("tie_word_embeddings", False))
    if b is not None:
        _add(b, embed=V * H, lm_head=0 if tie else V * H, norms=H)  # + the final norm
    return V * H * (1 if tie else 2) + H


def _dense_decoder(
    c: _Cfg, b: _Build, *, qkv_bias: bool = False, qk_norm: bool = False, norms: int = 2, windows: list[str] | None = None
) -> None:
    """Llama-shaped decoders: mistral, qwen2/3, phi3, gemma2/3."""
    H = c.int("hidden_size")
    V = c.int("vocab_size")
    L = c.int("num_hidden_layers")
    I = c.int("intermediate_size")
    nq, nkv, d = _attn_geometry(c, H)
    geo = {"num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    windows = windows or ["full"] * L
    for kind in sorted(set(windows)):  # a fixed order, whatever the hash seed
        if kind == "full":
            b.kinds["attn" if len(set(windows)) == 1 else "global"] = {"kind": "full", **geo}
        else:
            b.kinds["local" if len(set(windows)) > 1 else "attn"] = {
                "kind": "sliding",
                **geo,
                "sliding_window": c.int("sliding_window"),
            }
    names = {v["kind"]: k for k, v in b.kinds.items()}
    b.order = [names["full" if w == "full" else "sliding"] for w in windows]
    a_split, a_full = _attn_roles(H, nq, nkv, d, qkv_bias=qkv_bias, qk_norm=qk_norm)
    _add(b, attn=L * a_split, mlp=L * _gated_mlp(H, I), norms=L * (a_full + norms * H))
    b.params = _embed(c, H, V, b) + L * (a_split + a_full + _gated_mlp(H, I) + norms * H)
    b.intermediate = I


def _qwen_windows(c: _Cfg, L: int) -> list[str]:
    if c.get("use_sliding_window", False) and c.get("sliding_window"):
        mwl = c.int("max_window_layers", L, positive=False)
        return ["sliding" if i >= mwl else "full" for i in range(L)]
    # Qwen2/2.5/3 ship sliding_window with use_sliding_window false: every layer is full.
    c.get("use_sliding_window")
    return ["full"] * L


def _layer_types(c: _Cfg, L: int) -> list[str] | None:
    lt = c.get("layer_types")
    if lt is None:
        return None
    if not isinstance(lt, list) or len(lt) != L:
        raise KvcalcError("layer_types must list one type per layer", c.where, f"a list of {L} strings")
    out = []
    for t in lt:
        if t in ("full_attention", "attention"):
            out.append("full")
        elif t in ("sliding_attention", "sliding_window"):
            out.append("sliding")
        elif t in ("linear_attention", "mamba"):
            out.append("state")
        elif t in ("chunked_attention",):
            out.append("chunked")
        else:
            raise KvcalcError(
                f"unknown layer type {t!r} in layer_types",
                c.where,
                "full_attention, sliding_attention, linear_attention, chunked_attention",
            )
    return out


# ---- model_type handlers ---------------------------------------------------------------


def _llama(c: _Cfg, b: _Build) -> None:
    L = c.int("num_hidden_layers")
    win = ["sliding"] * L if c.get("sliding_window") else None
    _dense_decoder(c, b, qkv_bias=bool(c.get("attention_bias", False)), windows=win)


def _qwen2(c: _Cfg, b: _Build) -> None:
    _dense_decoder(c, b, qkv_bias=True, windows=_qwen_windows(c, c.int("num_hidden_layers")))


def _qwen3(c: _Cfg, b: _Build) -> None:
    _dense_decoder(c, b, qk_norm=True, windows=_qwen_windows(c, c.int("num_hidden_layers")))


def _gemma2(c: _Cfg, b: _Build) -> None:
    L = c.int("num_hidden_layers")
    win = _layer_types(c, L) or ["sliding" if i % 2 == 0 else "full" for i in range(L)]
    _dense_decoder(c, b, norms=4, windows=win)


def _gemma3(c: _Cfg, b: _Build) -> None:
    L = c.int("num_hidden_layers")
    pat = c.int("sliding_window_pattern")
    win = _layer_types(c, L) or ["full" if (i + 1) % pat == 0 else "sliding" for i in range(L)]
    _dense_decoder(c, b, norms=4, qk_norm=True, windows=win)
    if c.data.get("vision_config"):  # Gemma 3 4B and up; 1B is text only
        b.notes.append(LANGUAGE_MODEL_ONLY)


def _moe_block(
    b: _Build, *, E: int, k: int, n_layers: int, per_expert: int, dtype: str | None = None, inter: int | None = None
) -> None:
    b.moe = {"num_experts": E, "num_experts_per_tok": k, "num_moe_layers": n_layers, "params_per_expert": per_expert}
    if inter:
        # Where biases make params_per_expert / (3 x hidden) miss the expert's width.
        b.moe["intermediate_size"] = inter
    if dtype:
        b.moe["expert_weight_dtype"] = dtype


def _mixtral(c: _Cfg, b: _Build) -> None:
    H, V, L, I = (c.int(k) for k in ("hidden_size", "vocab_size", "num_hidden_layers", "intermediate_size"))
    nq, nkv, d = _attn_geometry(c, H)
    E, k = c.int("num_local_experts"), c.int("num_experts_per_tok")
    kind = {"kind": "full", "num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    if c.get("sliding_window"):
        kind = {**kind, "kind": "sliding", "sliding_window": c.int("sliding_window")}
    b.kinds["attn"] = kind
    b.order = ["attn"] * L
    layer = _attn_params(H, nq, nkv, d) + H * E + E * _gated_mlp(H, I) + 2 * H
    _add(b, attn=L * _attn_params(H, nq, nkv, d), router=L * H * E, norms=L * 2 * H)
    b.params = _embed(c, H, V, b) + L * layer
    b.intermediate = I
    _moe_block(b, E=E, k=k, n_layers=L, per_expert=_gated_mlp(H, I))


def _qwen3_moe(c: _Cfg, b: _Build) -> None:
    H, V, L = (c.int(k) for k in ("hidden_size", "vocab_size", "num_hidden_layers"))
    Im = c.int("moe_intermediate_size")
    nq, nkv, d = _attn_geometry(c, H)
    E, k = c.int("num_experts"), c.int("num_experts_per_tok")
    step = c.int("decoder_sparse_step", 1)
    dense = set(c.get("mlp_only_layers") or [])
    moe_layers = [i for i in range(L) if i not in dense and (i + 1) % step == 0]
    win = _qwen_windows(c, L)
    b.kinds["attn"] = {"kind": "full", "num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    if "sliding" in win:
        raise KvcalcError("sliding windows in qwen3_moe are not supported", c.where, "use_sliding_window: false")
    b.order = ["attn"] * L
    I = c.int("intermediate_size") if len(moe_layers) < L else 0
    a_split, a_full = _attn_roles(H, nq, nkv, d, qk_norm=True)
    attn = a_split + a_full + 2 * H
    _add(b, attn=L * a_split, norms=L * (a_full + 2 * H), router=len(moe_layers) * H * E)
    _add(b, mlp=(L - len(moe_layers)) * _gated_mlp(H, I))
    b.params = _embed(c, H, V, b) + L * attn + len(moe_layers) * (H * E + E * _gated_mlp(H, Im))
    b.params += (L - len(moe_layers)) * _gated_mlp(H, I)
    b.intermediate = I or Im
    _moe_block(b, E=E, k=k, n_layers=len(moe_layers), per_expert=_gated_mlp(H, Im))


def _qwen2_moe(c: _Cfg, b: _Build) -> None:
    """Qwen1.5-MoE / Qwen2-MoE (vLLM model_executor/models/qwen2_moe.py): Qwen2's attention with QKV
    biases; in every decoder_sparse_step-th layer a router, the routed experts and one shared expert
    of shared_expert_intermediate_size behind a sigmoid gate (a 1 x hidden linear)."""
    H, L = c.int("hidden_size"), c.int("num_hidden_layers")
    Im, Ish = c.int("moe_intermediate_size"), c.int("shared_expert_intermediate_size")
    nq, nkv, d = _attn_geometry(c, H)
    E, k = c.int("num_experts"), c.int("num_experts_per_tok")
    step = c.int("decoder_sparse_step", 1)
    dense = set(c.get("mlp_only_layers") or [])
    moe_layers = [i for i in range(L) if i not in dense and (i + 1) % step == 0]
    if "sliding" in _qwen_windows(c, L):
        raise KvcalcError("sliding windows in qwen2_moe are not supported", c.where, "use_sliding_window: false")
    # The shared expert's sigmoid gate: a 1 x hidden linear beside the router.
    _shared_expert_moe(c, b, (nq, nkv, d), E=E, k=k, Im=Im, Ish=Ish, n=len(moe_layers), router_extra=H, qkv_bias=True)


def _shared_expert_moe(
    c: _Cfg, b: _Build, geo: tuple[int, int, int], *, E: int, k: int, Im: int, Ish: int, n: int, router_extra: int, qkv_bias: bool
) -> None:
    """Full-attention layers, ``n`` of them sparse (a router of E x hidden plus ``router_extra`` parameters, E routed
    experts of Im, shared experts of Ish together), the rest a dense gated MLP of intermediate_size: Qwen2-MoE's and
    ERNIE-4.5's layout."""
    H, V, L = (c.int(x) for x in ("hidden_size", "vocab_size", "num_hidden_layers"))
    nq, nkv, d = geo
    b.kinds["attn"] = {"kind": "full", "num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    b.order = ["attn"] * L
    I = c.int("intermediate_size") if n < L else 0
    a_split, a_full = _attn_roles(H, nq, nkv, d, qkv_bias=qkv_bias)
    _add(b, attn=L * a_split, norms=L * (a_full + 2 * H), router=n * (H * E + router_extra))
    _add(b, shared_experts=n * _gated_mlp(H, Ish), mlp=(L - n) * _gated_mlp(H, I))
    b.params = _embed(c, H, V, b) + L * (a_split + a_full + 2 * H)
    b.params += n * (H * E + router_extra + _gated_mlp(H, Ish) + E * _gated_mlp(H, Im)) + (L - n) * _gated_mlp(H, I)
    b.intermediate = I or Im
    _moe_block(b, E=E, k=k, n_layers=n, per_expert=_gated_mlp(H, Im))


def _ernie45_moe(c: _Cfg, b: _Build) -> None:
    """ERNIE-4.5 MoE (vLLM 0.22.1 model_executor/models/ernie45_moe.py): Llama's attention (use_bias: QKV biases);
    layer i is sparse where moe_layer_start_index <= i <= moe_layer_end_index and (i + 1) % moe_layer_interval == 0,
    else a dense gated MLP of intermediate_size. A sparse layer: a router without bias beside its
    e_score_correction_bias (moe_num_experts each), the routed experts of moe_intermediate_size, top moe_k, and
    moe_num_shared_experts shared experts as one gated MLP of their widths together."""
    H, L = c.int("hidden_size"), c.int("num_hidden_layers")
    nq, nkv, d = _attn_geometry(c, H)
    E, k, Im = c.int("moe_num_experts"), c.int("moe_k"), c.int("moe_intermediate_size")
    shared = c.int("moe_num_shared_experts", 0, positive=False)
    start = c.int("moe_layer_start_index", 0, positive=False)
    # transformers' default -1 (and a missing field, vLLM's default) mean the last layer.
    end = c.get("moe_layer_end_index")
    last = L - 1 if end is None or end == -1 else c.int("moe_layer_end_index", positive=False)
    step = c.int("moe_layer_interval", 1)
    if k > E:
        raise KvcalcError(f"moe_k ({k}) is more than moe_num_experts ({E})", c.where, f"at most {E} experts a token")
    moe_layers = [i for i in range(L) if start <= i <= last and (i + 1) % step == 0]
    if not moe_layers:
        raise KvcalcError(
            f"no sparse layer: moe_layer_start_index {start} to moe_layer_end_index {last} every {step} of {L} layers",
            c.where,
            "a start at or below the end and an interval that falls inside the model's layers",
        )
    # The router's e_score_correction_bias: one value an expert.
    n, bias = len(moe_layers), bool(c.get("use_bias", False))
    _shared_expert_moe(c, b, (nq, nkv, d), E=E, k=k, Im=Im, Ish=Im * shared, n=n, router_extra=E, qkv_bias=bias)


def _deepseek(c: _Cfg, b: _Build, router_bias: bool = False) -> None:
    H, V, L = (c.int(k) for k in ("hidden_size", "vocab_size", "num_hidden_layers"))
    nq = c.int("num_attention_heads")
    r = c.int("kv_lora_rank")
    rope = c.int("qk_rope_head_dim")
    nope = c.int("qk_nope_head_dim")
    vd = c.int("v_head_dim")
    qr = c.get("q_lora_rank")
    b.kinds["mla"] = {
        "kind": "mla",
        "num_attention_heads": nq,
        "kv_lora_rank": r,
        "qk_rope_head_dim": rope,
        "qk_nope_head_dim": nope,
        "v_head_dim": vd,
    }
    if qr:
        b.kinds["mla"]["q_lora_rank"] = c.int("q_lora_rank")
    idx_dim = c.int("index_head_dim", 0, positive=False) if c.has("index_head_dim") else 0
    own = _indexer_layers(c, L) if idx_dim else [True] * L
    if idx_dim:
        # Every layer attends sparsely (a shared layer to the last indexed one's top-k); only the
        # indexed ones hold the indexer and its keys.
        b.kinds["mla"]["indexer_topk"] = c.int("index_topk")
        if not all(own):
            b.kinds["mla_shared"] = dict(b.kinds["mla"])
        b.kinds["mla"]["indexer_head_dim"] = idx_dim
        b.kinds["mla"]["indexer_heads"] = c.int("index_n_heads")
    b.order = ["mla" if o else "mla_shared" for o in own]
    # vLLM keeps the q and kv down-projections whole on every rank (a replicated fused_qkv_a_proj)
    # and splits the up-projections and o_proj by heads.
    if qr:
        qr = c.int("q_lora_rank")
        q = H * qr + qr + qr * nq * (nope + rope)
        q_split, q_full, q_norm = qr * nq * (nope + rope), H * qr, qr
    else:
        q = H * nq * (nope + rope)
        q_split, q_full, q_norm = q, 0, 0
    attn = q + H * (r + rope) + r + r * nq * (nope + vd) + nq * vd * H
    I, Im = c.int("intermediate_size"), c.int("moe_intermediate_size")
    E, k = c.int("n_routed_experts"), c.int("num_experts_per_tok")
    shared = c.int("n_shared_experts", 0, positive=False)
    first_dense = c.int("first_k_dense_replace", 0, positive=False)
    freq = c.int("moe_layer_freq", 1)
    moe_layers = [i for i in range(L) if i >= first_dense and i % freq == 0]
    router = H * E + (E if router_bias or c.get("topk_method") == "noaux_tc" else 0)  # V3's e_score_correction_bias
    _add(
        b,
        attn=L * (q_split + r * nq * (nope + vd) + nq * vd * H),
        replicated=L * (q_full + H * (r + rope)),
        norms=L * (q_norm + r + 2 * H),
        router=len(moe_layers) * router,
        shared_experts=len(moe_layers) * shared * _gated_mlp(H, Im),
        mlp=(L - len(moe_layers)) * _gated_mlp(H, I),
    )
    b.params = _embed(c, H, V, b) + L * (attn + 2 * H)
    if idx_dim:
        # DeepSeek-V3.2's indexer per layer (vLLM keeps it whole on every rank): wq_b from the q latent,
        # wk from the hidden state with its LayerNorm, and the per-head weights projection.
        n_idx = c.int("index_n_heads")
        indexer = (qr or H) * n_idx * idx_dim + H * idx_dim + H * n_idx
        n_own = sum(own)
        _add(b, replicated=n_own * indexer, norms=n_own * 2 * idx_dim)
        b.params += n_own * (indexer + 2 * idx_dim)
        b.notes.append(f"sparse-attention indexer: {n_idx} heads of {idx_dim}, top-{c.int('index_topk')}; its keys cached in fp8")
        if n_own < L:
            b.notes.append(
                f"{L - n_own} of the {L} layers reuse the last indexed layer's top-k: they hold no indexer and cache no "
                "indexer keys (vLLM 0.24 deepseek_v2.py, SGLang 0.5.23 memory_pool.py)"
            )
    b.params += len(moe_layers) * (router + (E + shared) * _gated_mlp(H, Im))
    b.params += (L - len(moe_layers)) * _gated_mlp(H, I)
    b.intermediate = I
    _moe_block(b, E=E, k=k, n_layers=len(moe_layers), per_expert=_gated_mlp(H, Im))
    if c.get("num_nextn_predict_layers"):
        b.notes.append("the multi-token-prediction (MTP) layer is not counted: it is not used in plain decoding")


def _indexer_layers(c: _Cfg, L: int) -> list[bool]:
    """Which layers run a sparse-attention indexer of their own (and cache its keys). A layer that
    reuses the last indexed layer's top-k ("shared", IndexCache) builds none: indexer_types where the
    config lists it (SGLang 0.5.23 model_config.py, transformers' glm_moe_dsa), else index_topk_pattern
    ("F" or "S" a layer), else layer i is indexed when max(i - offset + 1, 0) % index_topk_freq == 0,
    offset index_skip_topk_offset or 2 (vLLM 0.24 deepseek_v2.py, SGLang 0.5.23). DeepSeek-V3.2 and
    GLM-5 give none of these: every layer is indexed."""
    kinds = c.get("indexer_types")
    if kinds is not None:
        if not isinstance(kinds, list) or len(kinds) != L or any(k not in ("full", "shared") for k in kinds):
            raise KvcalcError("indexer_types is not one 'full' or 'shared' a layer", c.where, f"a list of {L} of them")
        return [k == "full" for k in kinds]
    pattern = c.get("index_topk_pattern")
    if pattern is not None:
        # A string or a list, one "F" or "S" a layer (vLLM and SGLang index it either way).
        if not isinstance(pattern, (str, list)) or len(pattern) != L or any(p not in ("F", "S") for p in pattern):
            raise KvcalcError("index_topk_pattern is not one 'F' or 'S' a layer", c.where, f"a string or list of {L} of them")
        return [p == "F" for p in pattern]
    freq = c.int("index_topk_freq") if c.has("index_topk_freq") else 1
    offset = c.int("index_skip_topk_offset") if c.has("index_skip_topk_offset") else 2
    return [max(i - offset + 1, 0) % freq == 0 for i in range(L)]


def _deepseek_biased_router(c: _Cfg, b: _Build) -> None:
    """DeepSeek's MLA and MoE layers whose router always carries the e_score_correction_bias, whatever
    topk_method says: GLM-5 (transformers' glm_moe_dsa, MLA with a sparse-attention indexer, 64 heads
    of 192 + 64 for q and k and 256 for v) and GLM-4.7-Flash (glm4_moe_lite); transformers 5.25.0
    modeling_glm_moe_dsa.py GlmMoeDsaTopkRouter, modeling_glm4_moe_lite.py."""
    _deepseek(c, b, router_bias=True)


def _gpt_oss(c: _Cfg, b: _Build) -> None:
    H, V, L, I = (c.int(k) for k in ("hidden_size", "vocab_size", "num_hidden_layers", "intermediate_size"))
    nq, nkv, d = _attn_geometry(c, H)
    E = c.int("num_local_experts")
    k = c.int("num_experts_per_tok") if c.has("num_experts_per_tok") else c.int("experts_per_token")
    win = _layer_types(c, L) or ["sliding" if i % 2 == 0 else "full" for i in range(L)]
    geo = {"num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    b.kinds["local"] = {"kind": "sliding", **geo, "sliding_window": c.int("sliding_window")}
    b.kinds["global"] = {"kind": "full", **geo}
    b.order = ["local" if w == "sliding" else "global" for w in win]
    per_expert = 3 * H * I + 2 * I + H  # gate_up and down projections with biases
    attn = _attn_params(H, nq, nkv, d, qkv_bias=True, o_bias=True) + nq  # + attention sinks
    a_split, a_full = _attn_roles(H, nq, nkv, d, qkv_bias=True, o_bias=True)
    _add(b, attn=L * a_split, norms=L * (a_full + nq + 2 * H), router=L * (H * E + E))
    b.params = _embed(c, H, V, b) + L * (attn + H * E + E + E * per_expert + 2 * H)
    b.intermediate = I
    q = c.get("quantization_config") or {}
    _moe_block(
        b, E=E, k=k, n_layers=L, per_expert=per_expert, dtype="mxfp4" if q.get("quant_method") == "mxfp4" else None, inter=I
    )


def _falcon(c: _Cfg, b: _Build) -> None:
    H, V, L = (c.int(k) for k in ("hidden_size", "vocab_size", "num_hidden_layers"))
    nq = c.int("num_attention_heads")
    d = H // nq
    if c.get("new_decoder_architecture"):
        nkv = c.int("num_kv_heads")
    elif c.get("multi_query", True):
        nkv = 1
    else:
        nkv = nq
    b.kinds["attn"] = {"kind": "full", "num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    b.order = ["attn"] * L
    bias = bool(c.get("bias", False))
    I = 4 * H
    attn = H * (nq + 2 * nkv) * d + H * H + ((nq + 2 * nkv) * d + H if bias else 0)
    mlp = 2 * H * I + ((I + H) if bias else 0)
    n_ln = 1 if c.get("parallel_attn", True) and not c.get("new_decoder_architecture") else 2
    tie = c.get("tie_word_embeddings", True)
    o_b = H if bias else 0
    _add(b, embed=V * H, lm_head=0 if tie else V * H, norms=2 * H + L * (n_ln * 2 * H + o_b + (H if bias else 0)))
    _add(b, attn=L * (attn - o_b), mlp=L * (mlp - (H if bias else 0)))
    b.params = V * H * (1 if tie else 2) + 2 * H + L * (attn + mlp + n_ln * 2 * H)
    b.intermediate = I


def _phi(c: _Cfg, b: _Build) -> None:
    """Phi-1/1.5/2 (vLLM 0.19.0 model_executor/models/phi.py): one LayerNorm a layer (weight and bias)
    before attention and MLP in parallel; QKV with biases, a dense output projection with a bias; an
    ungated MLP fc1 -> act -> fc2 of n_inner (4 x hidden when the config omits it; biases); a final
    LayerNorm and an untied LM head with a bias. Row-parallel biases (dense, fc2) are held in full."""
    H, V, L = (c.int(k) for k in ("hidden_size", "vocab_size", "num_hidden_layers"))
    nq, nkv, d = _attn_geometry(c, H)
    if nkv != nq:
        raise KvcalcError("phi with num_key_value_heads unlike num_attention_heads", c.where, "phi's multi-head attention")
    I = c.int("n_inner") if c.get("n_inner") is not None else 4 * H
    b.kinds["attn"] = {"kind": "full", "num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    b.order = ["attn"] * L
    a_split, _ = _attn_roles(H, nq, nkv, d, qkv_bias=True)
    _add(b, embed=V * H, lm_head=V * H + V, norms=2 * H + L * (2 * H + H + H))
    _add(b, attn=L * a_split, mlp=L * (2 * H * I + I))
    b.params = 2 * V * H + V + 2 * H + L * (2 * H + a_split + H + 2 * H * I + I + H)
    b.intermediate = I
    b.notes.append("the MLP is ungated (fc1 -> gelu -> fc2); the activation estimate takes it as a gated one of the same width")


def _phi3(c: _Cfg, b: _Build) -> None:
    L = c.int("num_hidden_layers")
    win = ["sliding"] * L if c.get("sliding_window") else None
    _dense_decoder(c, b, windows=win)


def _llama4(c: _Cfg, b: _Build) -> None:
    H, V, L = (c.int(k) for k in ("hidden_size", "vocab_size", "num_hidden_layers"))
    nq, nkv, d = _attn_geometry(c, H)
    E, k = c.int("num_local_experts"), c.int("num_experts_per_tok")
    I, Imlp = c.int("intermediate_size"), c.int("intermediate_size_mlp")
    chunk = c.int("attention_chunk_size")
    nrl = c.get("no_rope_layers")
    if nrl:
        if len(nrl) != L:
            raise KvcalcError("no_rope_layers must list one flag per layer", c.where, f"{L} entries of 0 or 1")
        rope = [bool(x) for x in nrl]
    else:
        interval = c.int("no_rope_layer_interval")
        rope = [(i + 1) % interval != 0 for i in range(L)]
    geo = {"num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    b.kinds["local"] = {"kind": "chunked", **geo, "attention_chunk_size": chunk}
    b.kinds["global"] = {"kind": "full", **geo}
    b.order = ["local" if r else "global" for r in rope]
    step = c.int("interleave_moe_layer_step")
    moe_layers = [i for i in range(L) if (i + 1) % step == 0]
    attn = _attn_params(H, nq, nkv, d) + 2 * H
    _add(b, attn=L * _attn_params(H, nq, nkv, d), norms=L * 2 * H, router=len(moe_layers) * H * E)
    _add(b, shared_experts=len(moe_layers) * _gated_mlp(H, I), mlp=(L - len(moe_layers)) * _gated_mlp(H, Imlp))
    b.params = _embed(c, H, V, b) + L * attn
    b.params += len(moe_layers) * (H * E + E * _gated_mlp(H, I) + _gated_mlp(H, I))  # routed + shared
    b.params += (L - len(moe_layers)) * _gated_mlp(H, Imlp)
    b.intermediate = I
    _moe_block(b, E=E, k=k, n_layers=len(moe_layers), per_expert=_gated_mlp(H, I))
    if c.data.get("vision_config"):
        b.notes.append(LANGUAGE_MODEL_ONLY)


def _state_bytes_dtype(c: _Cfg) -> tuple[int, str]:
    dt = _dtype_of(c)
    return {"fp32": 4, "bf16": 2, "fp16": 2}[dt], dt


def _qwen3_next(c: _Cfg, b: _Build) -> None:
    _hybrid_gdn(c, b, moe=True)


def _qwen3_5(c: _Cfg, b: _Build) -> None:
    """Qwen3.5 (qwen3_5_text: Qwen3-Next's Gated DeltaNet and gated-attention layers with a dense gated MLP in
    every layer) and Qwen3.5-MoE (qwen3_5_moe_text: Qwen3-Next's sparse block, a shared expert with its gate): vLLM
    0.22.1 model_executor/models/qwen3_5.py Qwen3_5DecoderLayer picks Qwen3NextMLP or Qwen3NextSparseMoeBlock by
    the text config's model_type; the layers are Qwen3-Next's classes (QwenGatedDeltaNetAttention, Qwen3NextAttention)."""
    _hybrid_gdn(c, b, moe=c.mt == "qwen3_5_moe_text")


def _hybrid_gdn(c: _Cfg, b: _Build, *, moe: bool) -> None:
    H, V, L = (c.int(k) for k in ("hidden_size", "vocab_size", "num_hidden_layers"))
    nq, nkv, d = _attn_geometry(c, H)
    nk, nv = c.int("linear_num_key_heads"), c.int("linear_num_value_heads")
    dk, dv = c.int("linear_key_head_dim"), c.int("linear_value_head_dim")
    kern = c.int("linear_conv_kernel_dim")
    types = _layer_types(c, L)
    if types is None:
        interval = c.int("full_attention_interval")
        types = ["full" if (i + 1) % interval == 0 else "state" for i in range(L)]
    key_dim, value_dim = nk * dk, nv * dv
    conv_ch = 2 * key_dim + value_dim
    conv, rec = (kern - 1) * conv_ch, nv * dk * dv
    eb, dt = _state_bytes_dtype(c)
    # Qwen3.5's configs name the recurrent state's dtype (mamba_ssm_dtype, float32 in the official files), which vLLM
    # keeps it in unless --mamba-ssm-cache-dtype says otherwise (0.22.1 model_executor/models/config.py
    # Qwen3_5ForConditionalGenerationConfig); the conv state stays in the model's dtype (mamba_cache_dtype auto).
    ssm = c.get("mamba_ssm_dtype") if c.mt in ("qwen3_5_text", "qwen3_5_moe_text") else None
    ssm_sizes = {"float32": (4, "fp32"), "bfloat16": (2, "bf16"), "float16": (2, "fp16")}
    if ssm is not None and ssm not in ssm_sizes:
        raise ValueError(f"mamba_ssm_dtype {ssm!r} is not one of {', '.join(ssm_sizes)}")
    reb, rdt = ssm_sizes[ssm] if ssm is not None else (eb, dt)
    held = (
        f"{conv + rec:,} elements in {dt}"
        if (reb, rdt) == (eb, dt)
        else f"{conv:,} elements in {dt} + {rec:,} in {rdt} (the config's mamba_ssm_dtype)"
    )
    b.kinds["linear"] = {
        "kind": "state",
        "state_bytes": conv * eb + rec * reb,
        "note": f"Gated DeltaNet: conv state ({kern}-1) x {conv_ch} + recurrent state {nv} x {dk} x {dv} = {held}",
        "mixer": "gdn",
        "recurrent_elements": rec,
        "recurrent_itemsize": reb,
    }
    b.kinds["attn"] = {"kind": "full", "num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    b.order = ["attn" if t == "full" else "linear" for t in types]
    n_full = b.order.count("attn")
    attn = _attn_params(H, nq, nkv, d, qk_norm=True, q_gate=True)
    gdn = H * (2 * key_dim + 2 * value_dim) + H * 2 * nv + conv_ch * kern + 2 * nv + dv + value_dim * H
    a_split, a_full = _attn_roles(H, nq, nkv, d, qk_norm=True, q_gate=True)
    gdn_split = H * (2 * key_dim + 2 * value_dim) + H * 2 * nv + conv_ch * kern + value_dim * H
    _add(b, attn=n_full * a_split + (L - n_full) * gdn_split)
    _add(b, norms=n_full * a_full + (L - n_full) * (2 * nv + dv) + L * 2 * H)
    if moe:
        E, k = c.int("num_experts"), c.int("num_experts_per_tok")
        Im, Ish = c.int("moe_intermediate_size"), c.int("shared_expert_intermediate_size")
        ffn = H * E + E * _gated_mlp(H, Im) + _gated_mlp(H, Ish) + H
        _add(b, router=L * (H * E + H), shared_experts=L * _gated_mlp(H, Ish))  # the router and the shared expert's gate
        b.intermediate = Im
        _moe_block(b, E=E, k=k, n_layers=L, per_expert=_gated_mlp(H, Im))
    else:
        I = c.int("intermediate_size")
        ffn = _gated_mlp(H, I)
        _add(b, mlp=L * ffn)
        b.intermediate = I
    b.params = _embed(c, H, V, b) + n_full * attn + (L - n_full) * gdn + L * (ffn + 2 * H)
    b.notes.append("the multi-token-prediction (MTP) layer is not counted")


def _jamba(c: _Cfg, b: _Build) -> None:
    H, V, L, I = (c.int(k) for k in ("hidden_size", "vocab_size", "num_hidden_layers", "intermediate_size"))
    nq, nkv, d = _attn_geometry(c, H)
    ap, ao = c.int("attn_layer_period"), c.int("attn_layer_offset", positive=False)
    ep, eo = c.int("expert_layer_period"), c.int("expert_layer_offset", positive=False)
    E, k = c.int("num_experts"), c.int("num_experts_per_tok")
    d_state, d_conv, expand = c.int("mamba_d_state"), c.int("mamba_d_conv"), c.int("mamba_expand")
    dt_rank = c.get("mamba_dt_rank", "auto")
    dt_rank = -(-H // 16) if dt_rank == "auto" else c.int("mamba_dt_rank")
    di = expand * H
    elems = di * (d_conv - 1) + di * d_state
    eb, dt = _state_bytes_dtype(c)
    b.kinds["mamba"] = {
        "kind": "state",
        "state_bytes": elems * eb,
        "note": f"Mamba: conv state {di} x ({d_conv}-1) + SSM state {di} x {d_state} = {elems:,} elements in {dt}",
    }
    b.kinds["attn"] = {"kind": "full", "num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    b.order = ["attn" if i % ap == ao else "mamba" for i in range(L)]
    moe_layers = [i for i in range(L) if i % ep == eo]
    n_attn = b.order.count("attn")
    mamba = (
        H * 2 * di  # in_proj
        + di * d_conv
        + (di if c.get("mamba_conv_bias", True) else 0)  # conv1d
        + di * (dt_rank + 2 * d_state)  # x_proj
        + dt_rank * di
        + di  # dt_proj
        + di * d_state
        + di  # A_log, D
        + di * H
        + (H if c.get("mamba_proj_bias", False) else 0)  # out_proj
        + dt_rank
        + 2 * d_state  # dt, B, C layernorms
    )
    mamba_small = (di if c.get("mamba_conv_bias", True) else 0) + di + di * d_state + di
    mamba_small += (H if c.get("mamba_proj_bias", False) else 0) + dt_rank + 2 * d_state
    _add(b, attn=n_attn * _attn_params(H, nq, nkv, d) + (L - n_attn) * (mamba - mamba_small))
    _add(b, norms=(L - n_attn) * mamba_small + L * 2 * H, router=len(moe_layers) * H * E)
    _add(b, mlp=(L - len(moe_layers)) * _gated_mlp(H, I))
    b.params = _embed(c, H, V, b) + n_attn * _attn_params(H, nq, nkv, d) + (L - n_attn) * mamba + L * 2 * H
    b.params += len(moe_layers) * (H * E + E * _gated_mlp(H, I)) + (L - len(moe_layers)) * _gated_mlp(H, I)
    b.intermediate = I
    _moe_block(b, E=E, k=k, n_layers=len(moe_layers), per_expert=_gated_mlp(H, I))


def _glm4_moe(c: _Cfg, b: _Build) -> None:
    H, V, L = (c.int(k) for k in ("hidden_size", "vocab_size", "num_hidden_layers"))
    nq, nkv, d = _attn_geometry(c, H)
    Im, I = c.int("moe_intermediate_size"), c.int("intermediate_size")
    E, k = c.int("n_routed_experts"), c.int("num_experts_per_tok")
    shared = c.int("n_shared_experts", 0, positive=False)
    first_dense = c.int("first_k_dense_replace", 0, positive=False)
    b.kinds["attn"] = {"kind": "full", "num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    b.order = ["attn"] * L
    n_moe = L - first_dense
    a_split, a_full = _attn_roles(
        H, nq, nkv, d, qkv_bias=bool(c.get("attention_bias", False)), qk_norm=bool(c.get("use_qk_norm"))
    )
    router = H * E + E  # gate and e_score_correction_bias
    _add(b, attn=L * a_split, norms=L * (a_full + 2 * H), router=n_moe * router)
    _add(b, shared_experts=n_moe * shared * _gated_mlp(H, Im), mlp=first_dense * _gated_mlp(H, I))
    b.params = _embed(c, H, V, b) + L * (a_split + a_full + 2 * H) + n_moe * (router + (E + shared) * _gated_mlp(H, Im))
    b.params += first_dense * _gated_mlp(H, I)
    b.intermediate = I
    _moe_block(b, E=E, k=k, n_layers=n_moe, per_expert=_gated_mlp(H, Im))
    if c.get("num_nextn_predict_layers"):
        b.notes.append("the multi-token-prediction (MTP) layer is not counted: it is not used in plain decoding")


def _minimax_m2(c: _Cfg, b: _Build) -> None:
    H, V, L, I = (c.int(k) for k in ("hidden_size", "vocab_size", "num_hidden_layers", "intermediate_size"))
    nq, nkv, d = _attn_geometry(c, H)
    E, k = c.int("num_local_experts"), c.int("num_experts_per_tok")
    b.kinds["attn"] = {"kind": "full", "num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    b.order = ["attn"] * L
    a_split, _ = _attn_roles(H, nq, nkv, d)
    qk_norm = (nq + nkv) * d if c.get("use_qk_norm") else 0  # per-layer norms over the whole q and k projections
    router = H * E + (E if c.get("use_routing_bias") else 0)
    _add(b, attn=L * a_split, norms=L * (qk_norm + 2 * H), router=L * router)
    b.params = _embed(c, H, V, b) + L * (a_split + qk_norm + 2 * H + router + E * _gated_mlp(H, I))
    b.intermediate = I
    _moe_block(b, E=E, k=k, n_layers=L, per_expert=_gated_mlp(H, I))
    if c.get("use_mtp"):
        b.notes.append("the multi-token-prediction (MTP) modules are not counted: they are not used in plain decoding")


def _mllama(c: _Cfg, b: _Build) -> None:
    H, V, L, I = (c.int(k) for k in ("hidden_size", "vocab_size", "num_hidden_layers", "intermediate_size"))
    nq, nkv, d = _attn_geometry(c, H)
    cross = c.get("cross_attention_layers") or []
    if not isinstance(cross, list) or any(not isinstance(i, int) or not 0 <= i < L for i in cross):
        raise KvcalcError("cross_attention_layers must list layer indices", c.where, f"integers from 0 to {L - 1}")
    v = c.get("vision_config") or {}
    tiles, img, patch = (int(v.get(key) or dflt) for key, dflt in (("max_num_tiles", 4), ("image_size", 560), ("patch_size", 14)))
    enc = tiles * ((img // patch) ** 2 + 1)
    geo = {"num_attention_heads": nq, "num_key_value_heads": nkv, "head_dim": d}
    b.kinds["attn"] = {"kind": "full", **geo}
    b.kinds["cross"] = {"kind": "cross", **geo, "encoder_tokens": enc}
    b.order = ["cross" if i in cross else "attn" for i in range(L)]
    a_split, _ = _attn_roles(H, nq, nkv, d)
    n_cross = len(set(cross))
    # Cross layers: q/k/v/o, q and k norms, two tanh gates; every layer has a gated MLP and two norms.
    _add(b, attn=L * a_split, mlp=L * _gated_mlp(H, I), norms=L * 2 * H + n_cross * (2 * d + 2))
    # MllamaTextModel's embedding holds 8 extra rows for the image tokens.
    tie = bool(c.get("tie_word_embeddings", False))
    _add(b, embed=(V + 8) * H, lm_head=0 if tie else V * H, norms=H)
    b.params = (V + 8) * H + (0 if tie else V * H) + H + L * (a_split + _gated_mlp(H, I) + 2 * H) + n_cross * (2 * d + 2)
    b.intermediate = I
    b.notes.append(f"cross-attention layers hold {enc:,} image tokens per request (one image of {tiles} tiles)")


HANDLERS = {
    "llama": _llama,
    "mistral": _llama,
    # Gemma (vLLM gemma.py) and Granite (granite.py) are Llama's layers: fused QKV and gate-up, two
    # RMSNorms a layer; Granite's multipliers scale activations, not parameters.
    "gemma": _llama,
    "granite": _llama,
    "qwen2_moe": _qwen2_moe,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "ernie4_5_moe": _ernie45_moe,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "kimi_k2": _deepseek,
    "gemma2": _gemma2,
    "gemma3": _gemma3,
    "gemma3_text": _gemma3,
    "gpt_oss": _gpt_oss,
    "falcon": _falcon,
    "phi": _phi,
    "phi3": _phi3,
    "llama4": _llama4,
    "llama4_text": _llama4,
    "qwen3_next": _qwen3_next,
    "qwen3_5_text": _qwen3_5,
    "qwen3_5_moe_text": _qwen3_5,
    "jamba": _jamba,
    "deepseek_v32": _deepseek,
    "glm_moe_dsa": _deepseek_biased_router,
    "glm4_moe": _glm4_moe,
    "glm4_moe_lite": _deepseek_biased_router,
    "minimax_m2": _minimax_m2,
    "mllama_text_model": _mllama,
    "qwen2_vl": _qwen2,
    "qwen2_vl_text": _qwen2,
    "qwen2_5_vl": _qwen2,
    "qwen2_5_vl_text": _qwen2,
    "qwen3_vl_text": _qwen3,
    "qwen3_vl_moe_text": _qwen3_moe,
}


# Config fields that mean the cache is not one K and one V per KV head per layer: an unknown
# model_type holding any of them is refused rather than sized as a Llama.
_CACHE_FIELD_HINTS = (
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "index_",
    "linear_",
    "mamba",
    "ssm",
    "conv_kernel",
    "attention_chunk_size",
    "cross_attention",
    "sliding_window_pattern",
    "swa_",
    "global_attn",
    "local_attn",
    "attn_type",
    "full_attention_interval",
    "layer_types",
    "kv_shared",
    "shared_kv",
    "num_kv_shared",
    "rwkv",
    "hybrid",
    "kda_",
    "lightning",
    "block_types",
    "attention_layers",
    "window_size",
    "compress_ratio",
    "nsa_",
    "dsa_",
)


def _cache_fields_not_understood(cfg: dict[str, Any]) -> list[str]:
    out = []
    for k, v in cfg.items():
        if v in (None, False, [], {}, 0):
            continue
        if (
            k == "layer_types"
            and isinstance(v, list)
            and all(t in ("full_attention", "sliding_attention", "attention") for t in v)
        ):
            continue
        if any(h in k for h in _CACHE_FIELD_HINTS):
            out.append(k)
    return sorted(out)


def _unknown(c: _Cfg, b: _Build, warnings: list[str]) -> None:
    """Read the standard fields of an unknown model_type, saying every assumption."""
    strange = _cache_fields_not_understood(c.data)
    if strange:
        raise KvcalcError(
            f"unknown model_type {c.data.get('model_type')!r} has fields that change the KV cache and that kvcalc cannot "
            f"interpret: {', '.join(strange[:8])}" + (" ..." if len(strange) > 8 else ""),
            c.where,
            "a supported model_type (" + ", ".join(SUPPORTED) + "), or a model spec YAML written for it (kvcalc schema model)",
        )
    H = c.int("hidden_size")
    nq = c.int("num_attention_heads")
    if not c.has("num_key_value_heads"):
        warnings.append(f"num_key_value_heads missing: assumed {nq} (= num_attention_heads, multi-head attention)")
    if not c.has("head_dim"):
        warnings.append(f"head_dim missing: assumed hidden_size / num_attention_heads = {H // nq}")
    if not c.has("intermediate_size"):
        raise KvcalcError("missing field 'intermediate_size'", c.where, "a positive integer (needed to count parameters)")
    L = c.int("num_hidden_layers")
    win = _layer_types(c, L)
    if win is None and c.get("sliding_window") and c.get("use_sliding_window", True):
        warnings.append(f"sliding_window {c.get('sliding_window')} assumed to apply to every layer")
        win = ["sliding"] * L
    if win and any(w not in ("full", "sliding") for w in win):
        raise KvcalcError(
            "layer_types other than full and sliding attention need a known model_type", c.where, ", ".join(SUPPORTED)
        )
    _dense_decoder(c, b, qkv_bias=bool(c.get("attention_bias", False)), windows=win)
    warnings.append(
        "parameters counted as a Llama-style decoder: gated MLP of intermediate_size, 2 norms per layer, "
        + ("tied" if c.get("tie_word_embeddings", False) else "untied")
        + " embeddings"
    )
    if not c.has("torch_dtype") and not c.has("dtype"):
        warnings.append("torch_dtype missing: weights assumed bf16")
    if not c.has("max_position_embeddings"):
        warnings.append("max_position_embeddings missing")


def spec_dict_from_config(cfg: Any, where: str = "config.json", name: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """A config.json document -> (model spec as a plain dict, warnings)."""
    if not isinstance(cfg, dict):
        raise KvcalcError("a config.json must hold a JSON object", where, "a Hugging Face model config")
    warnings: list[str] = []
    text = cfg.get("text_config")
    mt = cfg.get("model_type")
    if isinstance(text, dict):
        merged = {k: v for k, v in cfg.items() if k != "text_config"}
        merged.update(text)
        if "torch_dtype" not in text and "torch_dtype" in cfg:
            merged["torch_dtype"] = cfg["torch_dtype"]
        inner = text.get("model_type")
        mt = inner or (f"{mt}_text" if f"{mt}_text" in HANDLERS else mt)
        cfg = merged
    if not isinstance(mt, str) or not mt:
        raise KvcalcError("missing field 'model_type'", where, "a Hugging Face model config with model_type")
    c = _Cfg(cfg, where, mt)
    b = _Build()
    try:
        if mt in HANDLERS:
            HANDLERS[mt](c, b)
        else:
            warnings.append(
                f"unknown model_type {mt!r}: every cache field is a standard one, so it is sized as a Llama-style decoder "
                f"(supported: {', '.join(SUPPORTED)})"
            )
            _unknown(c, b, warnings)
    except (TypeError, ValueError, KeyError, AttributeError, ZeroDivisionError, IndexError, OverflowError) as e:
        if isinstance(e, KvcalcError):
            raise
        raise KvcalcError(f"cannot read this {mt} config: {e}", where, "the fields of the official config.json") from None

    wd = _dtype_of(c)
    checkpoint_dtype = None
    if wd == "fp32":
        # vLLM and SGLang load a float32 checkpoint at 16 bits under their default dtype=auto.
        checkpoint_dtype, wd = "fp32", "bf16"
        b.notes.append("the checkpoint is float32; engines load it at 16 bits (dtype=auto), which the spec counts")
    quant = _quantization(c.get("quantization_config"), b, where, mt)
    if quant is not None and quant["method"] == "mxfp4" and b.moe is not None:
        b.moe.pop("expert_weight_dtype", None)
    vision = _vision_params(cfg.get("vision_config"), c.int("hidden_size"), b, mt)
    tower = _vision_tower(cfg.get("vision_config"), mt, b) if vision else None
    max_pos = c.get("max_position_embeddings")
    if not isinstance(max_pos, int) or isinstance(max_pos, bool) or max_pos <= 0:
        # Older configs (ChatGLM, Qwen-1, MPT) name the context seq_length or max_seq_len: read it
        # with the same checks as any field.
        fallback = next((k for k in ("max_seq_len", "seq_length") if c.get(k) is not None), None)
        max_pos = c.int(fallback) if fallback else 2048
        if mt == "falcon":
            b.notes.append("falcon's config has no max_position_embeddings: 2048 (its training context) assumed")
        elif "max_position_embeddings missing" not in warnings:
            warnings.append(f"max_position_embeddings missing: {max_pos} assumed")
    if c.defaulted:
        b.notes.append("transformers defaults used for fields the file omits: " + ", ".join(c.defaulted))

    spec: dict[str, Any] = {
        "name": name or _guess_name(cfg),
        "aliases": [],
        "architecture": mt,
        "source": {"url": where, "config": dict(sorted(c.read.items())), "notes": "; ".join(b.notes)},
        "hidden_size": c.int("hidden_size"),
        "vocab_size": c.int("vocab_size"),
        "intermediate_size": b.intermediate,
        "tie_word_embeddings": bool(c.get("tie_word_embeddings", False)),
        "max_position_embeddings": int(max_pos),
        "weight_dtype": wd,
        "params_total": b.params,
    }
    if b.moe:
        spec["moe"] = b.moe
    experts = b.moe["num_experts"] * b.moe["num_moe_layers"] * b.moe["params_per_expert"] if b.moe else 0
    if sum(b.roles.values()) + experts != b.params:
        raise KvcalcError(
            f"internal: the {mt} roles add up to {sum(b.roles.values()) + experts:,}, not {b.params:,}", where, "a fix in hf.py"
        )
    spec["params"] = {r: b.roles.get(r, 0) for r in ROLES}
    if quant is not None:
        spec["quantization"] = quant
    if checkpoint_dtype:
        spec["checkpoint_dtype"] = checkpoint_dtype
    if vision:
        spec["vision_params"] = vision
    if tower:
        spec["vision"] = tower
    if vision:
        # As written, for SGLang's default memory fraction (server_args.py adjust_mem_fraction_for_vlm reads
        # vision_config.num_hidden_layers and hidden_size, 24 and 1024 where absent).
        v = cfg.get("vision_config") or {}
        for key, field_name in (("num_hidden_layers", "vision_config_layers"), ("hidden_size", "vision_config_hidden")):
            x = v.get(key)
            if isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 2**31:
                spec[field_name] = x
    caches = _rope_caches(c, mt)
    if caches:
        spec["rope_caches"] = caches
    rotary = _partial_rotary_factor(c, mt)
    if rotary != 1:
        spec["partial_rotary_factor"] = rotary
    spec["layer_kinds"] = b.kinds
    spec["layers"] = _compress(b.order)
    # Drop the config fields that only name things.
    spec["source"]["config"].pop("_name_or_path", None)
    return spec, warnings


_LINEAR_ROLES = ["attn", "mlp", "shared_experts", "experts", "replicated"]


def _not_converted(q: dict[str, Any]) -> list[str]:
    keep = q.get("modules_to_not_convert") or q.get("ignore") or q.get("ignored_layers") or q.get("exclude_modules") or []
    return [str(x) for x in keep] if isinstance(keep, list) else []


def _quantization(q: Any, b: _Build, where: str, mt: str) -> dict[str, Any] | None:
    """The checkpoint's quantization_config, as the roles it stores quantized and how."""
    if not isinstance(q, dict) or not q.get("quant_method"):
        return None
    qm = str(q["quant_method"]).lower()
    roles = list(_LINEAR_ROLES)
    keep = _not_converted(q)
    if any("self_attn" in k or "attn" == k.split(".")[-1] for k in keep):
        roles.remove("attn")
    out: dict[str, Any] = {}
    if qm == "fp8":
        blk = q.get("weight_block_size")
        if isinstance(blk, list) and blk:
            out = {"method": "fp8-block", "group_size": int(blk[0])}
        else:
            out = {"method": "fp8-tensor"}
    elif qm == "fbgemm_fp8":
        out = {"method": "fp8-channel"}
        layers = {int(p) for k in keep for p in re.findall(r"layers\.(\d+)\.mlp", k)}
        if layers:
            out["unquantized_layers"] = len(layers)
    elif qm in ("awq", "gptq"):
        bits = int(q.get("bits") or q.get("w_bit") or 4)
        if bits != 4 and (qm, bits) != ("gptq", 8):
            raise KvcalcError(
                f"{qm} with {bits}-bit weights is not modelled", where, f"4-bit {qm}" + (" or 8-bit gptq" if qm == "gptq" else "")
            )
        g = int(q.get("group_size") or q.get("q_group_size") or 128)
        out = {"method": qm, "group_size": g if g > 0 else 2**20}
        if bits == 8:
            # 8-bit GPTQ (Qwen's GPTQ-Int8 releases): vLLM runs it W8A16 through Marlin's 16-bit kernels (0.11.0
            # gptq_marlin.py TYPE_MAP (8, True): uint8b128; gptq.py for the rest), so only its bytes change.
            out = {"method": "gptq-int8", "group_size": out["group_size"], "weight_only": True}
    elif qm == "mxfp4":
        out = {"method": "mxfp4", "group_size": 32}
        roles = ["experts"] if b.moe else roles
    elif qm == "compressed-tensors":
        groups = q.get("config_groups") or {}
        w = next((g.get("weights") for g in groups.values() if isinstance(g, dict) and g.get("weights")), None)
        if not isinstance(w, dict):
            raise KvcalcError("compressed-tensors config without weights", where, "a config_groups entry with weights")
        bits, typ, strat = int(w.get("num_bits", 8)), str(w.get("type", "int")), str(w.get("strategy", "channel"))
        # A group with weights and no input_activations quantizes the weights alone: vLLM runs it W8A16 through Marlin
        # (0.11.0 compressed_tensors.py _get_scheme_from_parts: _is_wNa16_group_channel, _is_fp8_w8a16).
        acts = any(isinstance(g, dict) and g.get("weights") and g.get("input_activations") for g in groups.values())
        if bits == 8 and typ == "float":
            out = {"method": {"block": "fp8-block", "tensor": "fp8-tensor"}.get(strat, "fp8-channel")}
            if strat == "block":
                out["group_size"] = int((w.get("block_structure") or [128])[0])
        elif bits == 8:
            out = {"method": "int8-channel"}
        elif bits == 4 and typ == "float":
            out = {"method": "nvfp4", "group_size": int(w.get("group_size") or 16)}
        elif bits == 4:
            out = {"method": "gptq", "group_size": int(w.get("group_size") or 128)}
        else:
            raise KvcalcError(f"compressed-tensors {bits}-bit {typ} weights are not modelled", where, "8-bit or 4-bit")
        if bits == 8 and not acts:
            out["weight_only"] = True
    elif qm == "modelopt":
        algo = str(q.get("quant_algo") or (q.get("quantization") or {}).get("quant_algo") or "").upper()
        if "FP4" in algo:
            out = {"method": "nvfp4", "group_size": int(q.get("group_size") or 16)}
        elif "FP8" in algo:
            out = {"method": "fp8-tensor"}
        else:
            raise KvcalcError(f"modelopt {algo or 'algorithm'} is not modelled", where, "NVFP4 or FP8")
    else:
        raise KvcalcError(
            f"quantization {qm!r} is not modelled",
            where,
            "fp8, fbgemm_fp8, compressed-tensors, awq, gptq, mxfp4, modelopt (or give fit the measured weight size)",
        )
    if not b.moe:
        roles = [r for r in roles if r not in ("experts", "shared_experts")]
    if not b.roles.get("replicated"):
        roles = [r for r in roles if r != "replicated"]
    out["roles"] = roles
    alone = " (the weights alone: W8A16, 16-bit matmuls)" if out.get("weight_only") else ""
    b.notes.append(
        f"{qm} checkpoint: {', '.join(roles)} stored as {out['method']}{alone}; embeddings, LM head, norms and routers in 16 bits"
    )
    return out


@record(frozen=True)
class _ViT:
    """A Qwen-VL vision tower's geometry, read from vision_config by its family's field names."""

    family: str
    width: int
    intermediate: int
    depth: int
    heads: int
    out: int
    merge: int
    patch: int
    frames: int
    channels: int
    layer_norm: bool
    """LayerNorms with a bias (Qwen2-VL, Qwen3-VL), or RMSNorms (Qwen2.5-VL)."""
    gated: bool
    """A gated MLP (gate, up and down projections: Qwen2.5-VL), or fc1 / activation / fc2."""
    patch_bias: bool
    positions: int
    """A learned position table's rows (Qwen3-VL)."""
    deepstack: int
    """Deepstack mergers beside the final one (Qwen3-VL)."""


# model_type (a nested text_config's own for Qwen3-VL) -> the family whose ViT kvcalc counts exactly.
_VIT_FAMILIES = {
    "qwen2_vl": "Qwen2-VL",
    "qwen2_5_vl": "Qwen2.5-VL",
    "qwen3_vl_text": "Qwen3-VL",
    "qwen3_vl_moe_text": "Qwen3-VL",
    # Qwen3.5's tower is Qwen3-VL's ViT class without deepstack mergers (vLLM 0.22.1 qwen3_5.py builds
    # Qwen3_VisionTransformer from a vision_config with no deepstack_visual_indexes).
    "qwen3_5_text": "Qwen3-VL",
    "qwen3_5_moe_text": "Qwen3-VL",
}


def _vit(v: dict[str, Any], mt: str) -> _ViT:
    """The tower's geometry. Qwen2-VL's vision_config names the ViT's width embed_dim, its MLP
    mlp_ratio x embed_dim and the language model's width hidden_size; Qwen2.5-VL's and Qwen3-VL's name
    them hidden_size, intermediate_size and out_hidden_size. KeyError, TypeError or ValueError where a
    field is missing or not a number."""
    family = _VIT_FAMILIES[mt]
    if mt == "qwen2_vl":
        width, out = int(v["embed_dim"]), int(v["hidden_size"])
        inter = int(width * float(v.get("mlp_ratio") or 4))
    else:
        width, out, inter = int(v["hidden_size"]), int(v["out_hidden_size"]), int(v["intermediate_size"])
    qwen3 = family == "Qwen3-VL"
    return _ViT(
        family=family,
        width=width,
        intermediate=inter,
        depth=int(v["depth"]),
        heads=int(v["num_heads"]),
        out=out,
        merge=int(v.get("spatial_merge_size") or 2),
        patch=int(v.get("patch_size") or (16 if qwen3 else 14)),
        frames=int(v.get("temporal_patch_size") or 2),
        channels=int(v.get("in_channels") or v.get("in_chans") or 3),
        layer_norm=family != "Qwen2.5-VL",
        gated=family == "Qwen2.5-VL",
        patch_bias=qwen3,
        positions=int(v.get("num_position_embeddings") or 0) if qwen3 else 0,
        deepstack=len(v.get("deepstack_visual_indexes") or []) if qwen3 else 0,
    )


def _vit_params(t: _ViT) -> int:
    """The tower's parameters, as vLLM and transformers build it: a Conv3d patch embedding (with a
    bias in Qwen3-VL) and a learned position table (Qwen3-VL); blocks of two norms, qkv and output
    projections and an MLP, all projections with biases; the merger (a norm over the ViT's width,
    then merge^2 x width -> merge^2 x width -> out, with biases) and one more per deepstack layer
    (its norm over merge^2 x width). Qwen2.5-VL-7B: 676,550,144 (8,292,166,656 with its language
    model, the model card's 8.29 B); Qwen2-VL-7B: 675,759,104; Qwen3-VL-8B: 576,388,336
    (8,767,123,696 in all, the sum of its checkpoint's tensors)."""
    h, i, m = t.width, t.intermediate, t.merge * t.merge * t.width
    norm = 2 if t.layer_norm else 1  # weight and bias, or weight
    mlp = (3 * h * i + 2 * i + h) if t.gated else (2 * h * i + i + h)
    block = 2 * norm * h + (h * 3 * h + 3 * h) + (h * h + h) + mlp
    merger = (m * m + m) + (m * t.out + t.out)
    embed = t.channels * t.frames * t.patch * t.patch * h + (h if t.patch_bias else 0) + t.positions * h
    return embed + t.depth * block + norm * h + merger + t.deepstack * (2 * m + merger)


def _partial_rotary_factor(c: _Cfg, mt: str) -> float:
    """The config's partial_rotary_factor, at its top level or in rope_parameters (transformers 5), as vLLM's and
    SGLang's get_rope take it; MiniMax-M2's rotary_dim over its head_dim (vLLM 0.22.1 minimax_m2.py sets the factor
    so); 1 where it gives none."""
    rp = c.data.get("rope_parameters")
    if mt == "minimax_m2" and c.data.get("rotary_dim") is not None:
        f, where = c.int("rotary_dim") / c.int("head_dim"), "rotary_dim over head_dim,"
    elif c.data.get("partial_rotary_factor") is not None:
        f, where = c.get("partial_rotary_factor"), "partial_rotary_factor"
    elif isinstance(rp, dict) and rp.get("partial_rotary_factor") is not None:
        f, where = rp["partial_rotary_factor"], "rope_parameters.partial_rotary_factor"
    else:
        return 1.0
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1:
        raise KvcalcError(f"{where} {str(f)[:40]!r} is not a number in (0, 1]", c.where, "e.g. 0.5")
    return float(f)


def _rope_caches(c: _Cfg, mt: str) -> list[float]:
    """vLLM's rotary caches as multiples of max_position_embeddings, where they are not one such cache
    (rotary_embedding/__init__.py get_rope, 0.19.0): a linear or dynamic rope_scaling builds its cache
    over max_position x factor positions (linear_scaling_rope.py, dynamic_ntk_scaling_rope.py); Gemma 3
    gives its sliding layers a rope of their own, rope_local_base_freq without scaling (gemma3.py), so
    it holds two caches."""
    rs = c.data.get("rope_scaling")
    factor = 1.0
    if isinstance(rs, dict) and (rs.get("rope_type") or rs.get("type")) in ("linear", "dynamic"):
        scaling = c.get("rope_scaling")
        f = scaling.get("factor")
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1024:
            raise KvcalcError(f"rope_scaling.factor {str(f)[:40]!r} is not a number in (0, 1024]", c.where, "e.g. 8.0")
        factor = float(f)
    if mt in ("gemma3", "gemma3_text"):
        return [1.0, factor]
    return [factor] if factor != 1 else []


def _vision_params(v: Any, text_hidden: int, b: _Build, mt: str = "") -> int:
    """A vision tower's parameters (a ViT and its projector), estimated from vision_config (counted
    exactly for Qwen2-VL's, Qwen2.5-VL's and Qwen3-VL's)."""
    if not isinstance(v, dict):
        return 0
    if mt in _VIT_FAMILIES:
        try:
            t = _vit(v, mt)
            n = _vit_params(t)
        except (KeyError, TypeError, ValueError):
            n = 0
        if n > 0:
            b.notes.append(
                f"vision tower of {n / 1e9:.3f}B parameters counted from vision_config ({t.family}'s ViT: patch "
                "embedding, blocks and merger); engines load it beside the language model"
            )
            return n
    h = v.get("hidden_size") or v.get("embed_dim") or v.get("width")
    depth = v.get("num_hidden_layers") or v.get("depth") or v.get("num_layers")
    if not isinstance(h, int) or not isinstance(depth, int) or not 0 < h <= MAX_FIELD or not 0 < depth <= MAX_FIELD:
        b.notes.append("a vision_config kvcalc cannot read: the vision tower is not counted")
        return 0
    depth += int(v.get("num_global_layers") or 0)
    inter = v.get("intermediate_size")
    inter = inter if isinstance(inter, int) and inter > 0 else int(h * float(v.get("mlp_ratio") or 4))
    patch = int(v.get("patch_size") or 14)
    img = v.get("image_size") or 224
    img = img if isinstance(img, int) else 224
    gated = str(v.get("hidden_act", "")).lower() in ("silu", "swiglu")  # Qwen2.5-VL's ViT: a gated MLP
    layers = depth * (4 * h * h + (3 if gated else 2) * h * inter + 9 * h + inter)
    embed = int(v.get("num_channels") or 3) * patch * patch * h + (img // patch) ** 2 * h
    proj = h * text_hidden * (4 if v.get("spatial_merge_size") else 1) + text_hidden * text_hidden
    n = layers + embed + proj
    if n > MAX_FIELD:  # an intermediate size, patch or image size of no real model
        b.notes.append("a vision_config kvcalc cannot read (figures of no real model): the vision tower is not counted")
        return 0
    b.notes.append(
        f"vision tower estimated at {n / 1e9:.2f}B parameters from vision_config ({depth} layers of {h}); "
        "engines load it beside the language model"
    )
    return n


# The Qwen2-VL and Qwen2.5-VL processors (Qwen2VLImageProcessor) as their checkpoints configure them:
# preprocessor_config.json's max_pixels, 12,845,056 (3,584 x 3,584), which config.json does not hold.
QWEN_VL_MAX_PIXELS = 12_845_056
# Qwen3-VL's: preprocessor_config.json size.longest_edge 16,777,216 (4,096 x 4,096: vLLM 0.13.0 logs a
# 16,384-token image budget for Qwen3-VL, 4,096^2 / 32^2), and video_preprocessor_config.json
# size.longest_edge 25,165,824 over a video's frames (vLLM 0.11.0 qwen3_vl.py: "Official recommended
# max pixels is 24576 * 32 * 32").
QWEN3_VL_MAX_PIXELS = 16_777_216
QWEN3_VL_MAX_VIDEO_PIXELS = 25_165_824
# model_type (a nested text_config's own for Qwen3-VL) -> the encoder whose profile kvcalc models.
_ENCODER_OF = {
    "qwen2_vl": "qwen2_vl",
    "qwen2_5_vl": "qwen2_5_vl",
    "qwen3_vl_text": "qwen3_vl",
    "qwen3_vl_moe_text": "qwen3_vl",
    # Qwen3.5's processing is Qwen3-VL's (vLLM 0.22.1 qwen3_5.py Qwen3_5ProcessingInfo(Qwen3VLProcessingInfo)), and its
    # image processor the same (Qwen/Qwen3.5-2B-Base preprocessor_config.json: Qwen3VLProcessor, longest_edge
    # 16,777,216); its video budget is taken as Qwen3-VL's, not read from its own file.
    "qwen3_5_text": "qwen3_vl",
    "qwen3_5_moe_text": "qwen3_vl",
}


def _vision_tower(v: Any, mt: str, b: _Build) -> dict[str, Any] | None:
    """The vision encoder's geometry, for the encoders whose profile kvcalc models (Qwen2-VL's,
    Qwen2.5-VL's and Qwen3-VL's ViTs)."""
    encoder = _ENCODER_OF.get(mt)
    if encoder not in VISION_ENCODERS or not isinstance(v, dict):
        return None
    try:
        t = _vit(v, mt)
    except (KeyError, TypeError, ValueError):
        b.notes.append(f"a {_VIT_FAMILIES[mt]} vision_config kvcalc cannot read: the encoder's profile is not modelled")
        return None
    qwen3 = encoder == "qwen3_vl"
    max_pixels = QWEN3_VL_MAX_PIXELS if qwen3 else QWEN_VL_MAX_PIXELS
    video = (
        f"; max_video_pixels from the video_preprocessor_config.json longest_edge {QWEN3_VL_MAX_VIDEO_PIXELS:,}" if qwen3 else ""
    )
    return {
        "encoder": encoder,
        "hidden_size": t.width,
        "intermediate_size": t.intermediate,
        "num_heads": t.heads,
        "depth": t.depth,
        "patch_size": t.patch,
        "temporal_patch_size": t.frames,
        "spatial_merge_size": t.merge,
        "in_channels": t.channels,
        "out_hidden_size": t.out,
        "max_image_tokens": max_pixels // (t.patch * t.merge) ** 2,
        "deepstack": t.deepstack,
        "max_video_pixels": QWEN3_VL_MAX_VIDEO_PIXELS if qwen3 else 0,
        "source": f"vision_config; max_image_tokens from the {t.family} checkpoints' preprocessor_config.json "
        f"max_pixels {max_pixels:,} / ({t.patch} x {t.merge})^2{video} (assumed: config.json does not hold them)",
    }


def _guess_name(cfg: dict[str, Any]) -> str:
    n = cfg.get("_name_or_path")
    if isinstance(n, str) and n.strip():
        return n.strip().split("/")[-1].lower()
    return "imported-model"


@record(frozen=True)
class ImportReport:
    """``kvcalc import``: the spec a config.json gives, and every assumption made reading it."""

    spec: dict[str, Any]
    warnings: list[str]
    source: str


def import_config(path: str, name: str | None = None, url: str | None = None) -> ImportReport:
    """Read a config.json (or a folder holding one) into a validated spec dict."""
    from pathlib import Path

    from kvcalc.specs.loader import parse_json, probe, read_text, validate

    p = Path(path)
    if probe(p) == "dir":
        p = p / "config.json"
    doc = parse_json(read_text(p), str(p))
    default_name = (p.parent.name if p.name == "config.json" and p.parent.name else p.stem).lower()
    spec, warnings = spec_dict_from_config(doc, url or str(p), name=name or default_name)
    from kvcalc.specs.checkpoint import attach_checkpoint

    warnings += attach_checkpoint(spec, p.parent)
    if warnings:
        # Kept in the spec, so that every later run on it says what was assumed.
        spec["source"]["assumed"] = list(warnings)
    validate("model", spec, str(p), None)
    return ImportReport(spec, warnings, url or str(p))
