"""The model spec: what a YAML file in model_specs/ (or an imported config.json) says.

Plain dataclasses: pydantic validates them (``kvcalc.specs.loader.validate``) when they come
from a user's file and exports their JSON Schema; the tested catalog is built directly with
``from_dict``, so a command that reads only catalog specs never imports pydantic.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from kvcalc._record import record
from kvcalc.specs.dtypes import normalize_weight_dtype
from kvcalc.specs.layers import FORBID, MLA, LayerKind, LayerKindBase, check_positive, layer_from_dict

if TYPE_CHECKING:
    # Annotated constraints for pydantic, bound by kvcalc.specs.constraints.install().
    Pos = int
    NonNeg = int
    Text = str
    Names = list[str]
    KindMap = dict[str, LayerKind]
    Groups = list["LayerGroup"]
MAX_LAYERS = 100_000


@record(kw_only=True)
class Source:
    """Where the figures came from."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    url: Text
    """The official config.json (or datasheet) the spec was read from."""
    config: dict[str, Any] = field(default_factory=dict)
    """The field values of that file that the spec uses, copied so they can be checked by eye."""
    notes: str = ""
    assumed: list[str] = field(default_factory=list)
    """What kvcalc import assumed reading the config (an unknown model_type read as Llama-style, a
    head_dim derived): shown as warnings with every report on the spec."""


@record(kw_only=True)
class LayerGroup:
    """``pattern`` (names of ``layer_kinds``) repeated ``repeat`` times, in layer order."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    pattern: Names
    repeat: Pos = 1

    def __post_init__(self) -> None:
        check_positive(self, "repeat")
        if not self.pattern:
            raise ValueError("pattern must name at least one layer kind")


@record(kw_only=True)
class MoE:
    """Routed experts: enough to count resident, active and expected-read parameters."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    num_experts: Pos
    num_experts_per_tok: Pos
    num_moe_layers: Pos
    params_per_expert: Pos
    """Parameters of one routed expert in one layer."""
    expert_weight_dtype: str | None = None
    """When experts are stored differently from the rest (gpt-oss: mxfp4)."""
    intermediate_size: NonNeg = 0
    """One routed expert's intermediate width (moe_intermediate_size); 0: params_per_expert / (3 x hidden)."""

    def __post_init__(self) -> None:
        check_positive(self, "num_experts", "num_experts_per_tok", "num_moe_layers", "params_per_expert")
        if self.expert_weight_dtype is not None:
            self.expert_weight_dtype = normalize_weight_dtype(self.expert_weight_dtype, "moe.expert_weight_dtype")
        if self.num_experts_per_tok > self.num_experts:
            raise ValueError(f"num_experts_per_tok ({self.num_experts_per_tok}) exceeds num_experts ({self.num_experts})")


ROLES = ("embed", "lm_head", "attn", "mlp", "shared_experts", "router", "norms", "replicated")
"""Parameter roles besides the routed experts (counted from ``moe``). Split over tensor-parallel ranks:
embed and lm_head (vocabulary-parallel), attn, mlp, shared_experts. Held in full by every rank:
router, norms (norms, biases and other vectors), replicated (matrices an engine does not split,
such as DeepSeek's q and kv down-projections)."""
SPLIT_ROLES = ("embed", "lm_head", "attn", "mlp", "shared_experts")
QUANT_METHODS = ("fp8-block", "fp8-channel", "fp8-tensor", "int8-channel", "awq", "gptq", "gptq-int8", "mxfp4", "nvfp4")


@record(kw_only=True)
class ParamRoles:
    """Parameters by role, counted from the config (their sum, with the routed experts, is params_total)."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    embed: NonNeg = 0
    lm_head: NonNeg = 0
    attn: NonNeg = 0
    mlp: NonNeg = 0
    shared_experts: NonNeg = 0
    router: NonNeg = 0
    norms: NonNeg = 0
    replicated: NonNeg = 0

    def __post_init__(self) -> None:
        for r in ROLES:
            v = getattr(self, r)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 2**50:
                raise ValueError(f"params.{r} must be a whole number from 0 to 2^50, got {str(v)[:40]!r}")

    @property
    def total(self) -> int:
        return sum(getattr(self, r) for r in ROLES)


@record(kw_only=True)
class Quantization:
    """How the checkpoint stores its quantized weights (from its quantization_config)."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    method: str
    """fp8-block (128x128 blocks, fp32 scales), fp8-channel (a scale per output row), fp8-tensor,
    int8-channel, awq / gptq (4-bit, fp16 scale and 4-bit zero per group), gptq-int8 (8-bit GPTQ: fp16 scale and
    8-bit zero per group, run W8A16), mxfp4 (an 8-bit exponent
    per 32), nvfp4 (an fp8 scale per 16)."""
    roles: Names
    """The roles stored quantized (attn, mlp, shared_experts, experts, replicated); others stay 16-bit."""
    group_size: Pos = 128
    """Weights per scale (awq, gptq) or the block edge (fp8-block)."""
    unquantized_layers: NonNeg = 0
    """Layers whose quantized roles the checkpoint keeps in 16-bit (Meta's fp8: the first and last MLPs)."""
    weight_only: bool = False
    """Whether only the weights are quantized (compressed-tensors with no input_activations, and 8-bit GPTQ: W8A16, run
    through Marlin's 16-bit kernels, vLLM 0.11.0 compressed_tensors.py CompressedTensorsW8A16Fp8 and
    CompressedTensorsWNA16, gptq_marlin.py): the matmuls then run at 16 bits and quantize no activations. False: 8-bit
    checkpoints run W8A8."""
    source: str = ""

    def __post_init__(self) -> None:
        if self.method not in QUANT_METHODS:
            raise ValueError(f"quantization.method {self.method!r} is not one of {', '.join(QUANT_METHODS)}")
        for r in self.roles:
            if r not in (*ROLES, "experts"):
                raise ValueError(f"quantization.roles names {r!r}, not a role ({', '.join((*ROLES, 'experts'))})")
        check_positive(self, "group_size")


VISION_ENCODERS = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")
"""The vision encoders whose profile run kvcalc models from the engine's code (kvcalc.engine.encoder)."""


@record(kw_only=True)
class VisionTower:
    """A vision encoder's geometry, for the engine's profile of it on the largest dummy image
    (vision_config, and the processor's max_pixels from preprocessor_config.json)."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    encoder: str
    """The encoder's code in the engines: qwen2_vl (Qwen2-VL's ViT), qwen2_5_vl (Qwen2.5-VL's
    windowed ViT with a gated MLP) or qwen3_vl (Qwen3-VL's ViT with deepstack mergers)."""
    hidden_size: Pos
    intermediate_size: Pos
    num_heads: Pos
    depth: Pos
    patch_size: Pos
    temporal_patch_size: Pos = 1
    spatial_merge_size: Pos = 1
    in_channels: Pos = 3
    out_hidden_size: Pos
    """Width of the embeddings the encoder hands the language model."""
    max_image_tokens: Pos
    """Embeddings of the largest image the processor makes: max_pixels / (patch_size x
    spatial_merge_size)^2."""
    deepstack: NonNeg = 0
    """Deepstack mergers beside the final one (Qwen3-VL): the encoder hands the language model (1 +
    deepstack) x out_hidden_size values a token."""
    max_video_pixels: NonNeg = 0
    """The video processor's most pixels over all of a video's frames (Qwen3-VL's
    video_preprocessor_config.json longest_edge), which sizes the engine's dummy video; 0: none."""
    source: str = ""

    def __post_init__(self) -> None:
        if self.encoder not in VISION_ENCODERS:
            raise ValueError(f"vision.encoder {str(self.encoder)[:40]!r} is not one of {', '.join(VISION_ENCODERS)}")
        check_positive(
            self,
            "hidden_size",
            "intermediate_size",
            "num_heads",
            "depth",
            "patch_size",
            "temporal_patch_size",
            "spatial_merge_size",
            "in_channels",
            "out_hidden_size",
            "max_image_tokens",
        )
        if self.hidden_size % self.num_heads:
            raise ValueError(f"vision.hidden_size {self.hidden_size} is not a multiple of num_heads {self.num_heads}")

    @property
    def patches_per_image(self) -> int:
        """Patches the encoder runs for its largest image (each embedding merges merge^2 patches)."""
        return self.max_image_tokens * self.spatial_merge_size**2

    @property
    def embedding_width(self) -> int:
        """Values a token of the encoder's output: the final merger's and each deepstack merger's."""
        return self.out_hidden_size * (1 + self.deepstack)

    @property
    def pixel_bytes_per_patch(self) -> int:
        """One patch's pixels as the engine hands them to the encoder, at 16 bits."""
        return self.in_channels * self.temporal_patch_size * self.patch_size**2 * 2


@record(kw_only=True)
class Checkpoint:
    """The checkpoint's bytes as its files hold them, where kvcalc read them (a model folder's
    safetensors headers, or its index's metadata.total_size)."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    total_bytes: NonNeg
    """All tensors as stored."""
    role_bytes: dict[str, int] = field(default_factory=dict)
    """Bytes of each role as loaded (float32 weights at 16 bits), from the headers; empty from an index."""
    source: str = ""

    def __post_init__(self) -> None:
        for k, v in self.role_bytes.items():
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 2**60:
                raise ValueError(f"checkpoint.role_bytes.{str(k)[:40]} must be a whole number of bytes")


@record(kw_only=True)
class ModelSpec:
    __pydantic_config__: ClassVar[dict[str, str]] = FORBID

    name: Text
    aliases: list[str] = field(default_factory=list)
    description: str = ""
    architecture: str = ""
    """Hugging Face model_type."""
    source: Source
    hidden_size: Pos
    vocab_size: Pos
    intermediate_size: NonNeg = 0
    """Dense MLP width (or the expert width for all-MoE models); used for activation estimates."""
    tie_word_embeddings: bool = False
    max_position_embeddings: Pos
    weight_dtype: str = "bf16"
    params_total: Pos
    """All parameters of the language model, embeddings included (computed from the config)."""
    moe: MoE | None = None
    params: ParamRoles | None = None
    """Parameters by role; without it every parameter but the experts is split over TP ranks."""
    quantization: Quantization | None = None
    checkpoint_dtype: str | None = None
    """The checkpoint's own dtype where the engines serve another (float32 checkpoints load at 16 bits)."""
    vision_params: NonNeg = 0
    """Parameters of a vision tower and projector the engines load beside the language model (estimated)."""
    rope_caches: list[float] = field(default_factory=list)
    """vLLM's rotary cos/sin caches, each as a multiple of max_position_embeddings positions, where they
    are not one such cache: a linear or dynamic rope_scaling multiplies its cache by the factor, and
    Gemma 3 builds a local and a global one. Empty: one cache (four times as long for M-RoPE)."""
    partial_rotary_factor: float = 1.0
    """The share of each head's dimensions the rotary embedding turns (config.json partial_rotary_factor, or
    rope_parameters'): the engines' cos/sin cache holds int(head_dim x factor) dimensions a position (vLLM
    rotary_embedding/__init__.py get_rope, 0.22.1; SGLang layers/rotary_embedding.py get_rope, 0.5.9)."""
    vision: VisionTower | None = None
    """The vision encoder's geometry, where kvcalc models the engine's profile of it."""
    vision_config_layers: Pos | None = None
    """vision_config's num_hidden_layers as config.json writes it; None where it does not (Qwen-VL's ViT
    names its depth 'depth'). SGLang's default memory fraction reads it (24 where absent)."""
    vision_config_hidden: Pos | None = None
    """vision_config's hidden_size as config.json writes it; None where it does not (SGLang then takes 1024)."""
    checkpoint: Checkpoint | None = None
    """The checkpoint's own bytes, where its files were read; the weights then come from them."""
    layer_kinds: KindMap
    layers: Groups
    import_warnings: list[str] = field(default_factory=list)
    """What kvcalc assumed reading the spec from a config.json (shown with every report on it)."""

    def __post_init__(self) -> None:
        check_positive(self, "hidden_size", "vocab_size", "max_position_embeddings", "params_total")
        if (
            isinstance(self.intermediate_size, bool)
            or not isinstance(self.intermediate_size, int)
            or not 0 <= self.intermediate_size <= 2**50
        ):
            raise ValueError(f"intermediate_size must be a whole number from 0 to 2^50, got {str(self.intermediate_size)[:40]!r}")
        self.weight_dtype = normalize_weight_dtype(self.weight_dtype, "weight_dtype")
        if not self.layer_kinds or not self.layers:
            raise ValueError("a model needs at least one layer kind and one layer group")
        if self.num_layers > MAX_LAYERS:
            raise ValueError(f"{self.num_layers:,} layers is more than kvcalc accepts ({MAX_LAYERS:,})")
        for gi, g in enumerate(self.layers):
            for name in g.pattern:
                if name not in self.layer_kinds:
                    raise ValueError(
                        f"layers[{gi}].pattern names {name!r}, which is not in layer_kinds ({', '.join(self.layer_kinds)})"
                    )
        if self.moe:
            if self.moe.num_moe_layers > self.num_layers:
                raise ValueError(f"moe.num_moe_layers ({self.moe.num_moe_layers}) exceeds the {self.num_layers} layers")
            if self.expert_params > self.params_total:
                raise ValueError("the routed experts hold more parameters than params_total")
        if self.embedding_params > self.params_total:
            raise ValueError("vocab_size * hidden_size exceeds params_total")
        if self.params is not None and self.params.total + self.expert_params != self.params_total:
            raise ValueError(
                f"params roles add up to {self.params.total + self.expert_params:,} with the experts, not params_total "
                f"{self.params_total:,}"
            )
        if self.checkpoint_dtype is not None:
            self.checkpoint_dtype = normalize_weight_dtype(self.checkpoint_dtype, "checkpoint_dtype")
        if (
            isinstance(self.vision_params, bool)
            or not isinstance(self.vision_params, int)
            or not 0 <= self.vision_params <= 2**50
        ):
            raise ValueError(f"vision_params must be a whole number from 0 to 2^50, got {str(self.vision_params)[:40]!r}")
        for f in ("vision_config_layers", "vision_config_hidden"):
            v = getattr(self, f)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= 2**31):
                raise ValueError(f"{f} must be a whole number from 1 to 2^31, got {str(v)[:40]!r}")

        if not isinstance(self.rope_caches, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x <= 1024 for x in self.rope_caches
        ):
            raise ValueError("rope_caches must be a list of multiples of max_position_embeddings, each in (0, 1024]")
        rf = self.partial_rotary_factor
        if isinstance(rf, bool) or not isinstance(rf, (int, float)) or not 0 < rf <= 1:
            raise ValueError(f"partial_rotary_factor must be a number in (0, 1], got {str(rf)[:40]!r}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelSpec:
        """Build from a trusted dict (the catalog). User files go through pydantic instead."""
        d = dict(d)
        d["source"] = Source(**d["source"])
        if d.get("moe"):
            d["moe"] = MoE(**d["moe"])
        if d.get("params"):
            d["params"] = ParamRoles(**d["params"])
        if d.get("quantization"):
            d["quantization"] = Quantization(**d["quantization"])
        if d.get("vision"):
            d["vision"] = VisionTower(**d["vision"])
        d["layer_kinds"] = {k: layer_from_dict(v) for k, v in d["layer_kinds"].items()}
        d["layers"] = [LayerGroup(**g) for g in d["layers"]]
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    # ---- derived figures -------------------------------------------------------------
    @cached_property
    def layer_list(self) -> list[str]:
        """Layer kind names in layer order, one per layer."""
        out: list[str] = []
        for g in self.layers:
            out.extend(g.pattern * g.repeat)
        return out

    @property
    def num_layers(self) -> int:
        return sum(g.repeat * len(g.pattern) for g in self.layers)

    def layer_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(self.layer_kinds, 0)
        for g in self.layers:
            for name in g.pattern:
                counts[name] += g.repeat
        return counts

    @property
    def expert_params(self) -> int:
        m = self.moe
        return m.num_moe_layers * m.num_experts * m.params_per_expert if m else 0

    @property
    def params_active(self) -> int:
        """Parameters one token uses: everything but the routed experts it is not sent to."""
        m = self.moe
        if not m:
            return self.params_total
        return self.params_total - m.num_moe_layers * (m.num_experts - m.num_experts_per_tok) * m.params_per_expert

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    def kinds(self) -> list[LayerKindBase]:
        """The layer kinds that some layer uses."""
        counts = self.layer_counts()
        return [k for name, k in self.layer_kinds.items() if counts[name]]

    @property
    def has_windows(self) -> bool:
        """Some layer attends to a bounded window (sliding window, chunked local attention)."""
        return any(k.window is not None for k in self.kinds())

    @property
    def mla(self) -> MLA | None:
        """The model's MLA layer kind (DeepSeek-style latent attention), if it has one."""
        return next((k for k in self.kinds() if isinstance(k, MLA)), None)

    @property
    def has_sparse_mla(self) -> bool:
        """Some layer is sparse MLA (an indexer: DeepSeek-V3.2), whose fp8 cache has a layout of its own."""
        return any(k.sparse_mla for k in self.kinds())

    @property
    def has_state(self) -> bool:
        """Some layer keeps a fixed state per request (Mamba, linear attention)."""
        return any(k.state_bytes_per_request(1) for k in self.kinds())
