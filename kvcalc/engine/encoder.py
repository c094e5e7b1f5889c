"""vLLM V1's profile run of a vision encoder: the memory it peaks at on the largest dummy image.

Before it sizes the KV cache, vLLM V1 runs the multimodal encoder once on a dummy batch of the
largest images its processor makes, keeps their embeddings in the encoder cache, and then runs the
text forward pass and the sampler with those embeddings (and the dummy pixels) still alive
(v1/worker/gpu_model_runner.py ``profile_run``, 0.9.0.1 to 0.11.0). The profiled activation peak is
the larger of the two phases:

    encoder phase = patches x (pixel bytes + rotary tables + the widest live set of one block)
    text phase    = the text forward / sampler peak + the pixels + the cached embeddings

Qwen2.5-VL's ViT (model_executor/models/qwen2_5_vl.py) and Qwen2-VL's (qwen2_vl.py, the same
attention) run eagerly in 16 bits; in units of one patch's hidden state (hidden_size x 2 B), the
widest moment is the rotary embedding of q and k:
the block's input and its norm's output (2, both referenced by the callers while the attention
runs), the qkv projection (3/tp, kept by the forward's local name), the contiguous q, k and v
(3/tp), and then

- "each" (0.8 to 0.10.2): q, then k, rotated one at a time through a float32 copy and a float32
  output before the cast back (2/tp + 2/tp + 1/tp): 2 + 11/tp;
- "concat" (0.11.0): q and k joined first (2/tp), their float32 copy and output (4/tp + 4/tp) and
  the cast (2/tp): 2 + 18/tp;

and at TP above 1 the all-gather of the qkv projection (each rank gathers every rank's share, 3,
then concatenates them, 3 more; Qwen2-VL's all-gather and reshape the same): 2 + 3/tp + 6. The
MLP's moment is counted too, narrower for these towers: Qwen2.5-VL's gated MLP 4 + 3i/tp (the
block's input, the attention's sum and its norm, gate-and-up 2i/tp and the activation i/tp, i =
intermediate / hidden), Qwen2-VL's fc1 and QuickGELU 3 + 2i/tp.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from kvcalc._record import record
from kvcalc.specs.model import ModelSpec, VisionTower

VisionProfile = Literal["none", "each", "concat"]
F32 = 4
B16 = 2


@record(frozen=True)
class EncoderProfile:
    """The encoder's share of a V1 profile run."""

    items: int
    """Dummy images of the largest size in the profile's batch."""
    patches: int
    peak_bytes: int
    """The encoder phase's peak: pixels, rotary tables and the widest moment of one block."""
    held_bytes: int
    """What stays alive through the text pass: the dummy pixels and the cached embeddings."""
    units: Fraction
    """The widest moment of one block, in patches' hidden states."""


def block_units(v: VisionTower, style: VisionProfile, tp: int) -> Fraction:
    """The widest live set of one Qwen2-VL or Qwen2.5-VL vision block, in units of one patch's hidden
    state, exactly (see the module's docstring for each term)."""
    rotary = 11 if style == "each" else 18
    attention = 2 + Fraction(rotary, tp)
    if tp > 1:
        attention = max(attention, 2 + Fraction(3, tp) + 6)
    i = Fraction(v.intermediate_size, v.hidden_size)
    if v.encoder == "qwen2_vl":
        # The block's input, the attention's sum and its norm, fc1 (i/tp) and its QuickGELU (i/tp).
        mlp = 3 + 2 * i / tp
    else:
        # The block's input, the attention's sum and its norm (or the fused norm's two), the
        # gate-and-up projection (2i/tp) and its activation (i/tp).
        mlp = 4 + 3 * i / tp
    return max(attention, mlp)


def modelled(model: ModelSpec, style: VisionProfile) -> bool:
    """Whether kvcalc models this model's encoder profile under a release of this ``style``."""
    return model.vision is not None and style != "none"


def encoder_profile(model: ModelSpec, style: VisionProfile, tp: int, batched_tokens: int) -> EncoderProfile | None:
    """The encoder's profile for ``model`` under a release whose ViT code is ``style``; None where
    kvcalc does not model it (no vision geometry, or a release it has not read).

    The batch: the encoder budget is max(max_num_batched_tokens, one image's tokens), and it holds
    budget // tokens-per-image images (v1/worker/gpu_model_runner.py profile_run, 0.10.0;
    v1/worker/utils.py MultiModalBudget.get_max_items, 0.10.2 and 0.11.0; 0.9.0.1 rounds up, which
    differs only for budgets above one image that are not a multiple of it)."""
    v = model.vision
    if v is None or not modelled(model, style):
        return None
    per_image = v.max_image_tokens
    items = max(batched_tokens, per_image) // per_image
    patches = items * v.patches_per_image
    head_dim = v.hidden_size // v.num_heads
    units = block_units(v, style, tp)
    # The rotary position table (float32, head_dim / 2 a patch) and its cos and sin.
    rotary = 3 * (head_dim // 2) * F32
    # Whole bytes: a fractional share of hidden states a patch (3/tp ...) rounds down over all patches.
    peak = patches * (v.pixel_bytes_per_patch + rotary) + int(patches * units * v.hidden_size * B16)
    embeddings = items * per_image * v.out_hidden_size * B16
    return EncoderProfile(items, patches, peak, patches * v.pixel_bytes_per_patch + embeddings, units)
