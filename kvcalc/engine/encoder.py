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

Qwen3-VL's ViT (qwen3_vl.py) runs Qwen2.5-VL's attention with Qwen2-VL's plain MLP (3 + 2i/tp),
and three deepstack mergers whose outputs stay alive to the end. Its profile differs by release:

- 0.11.0 to 0.12.0 count a video item at its formatted prompt tokens, 12.5 a video token
  (qwen3_vl.py get_max_video_tokens), so the budget holds one dummy video, not an image. The video
  is the one ``_get_max_video_frames`` finds: frames added while the tokens of one more stay within
  max_model_len, at most 24,576 (``_MAX_FRAMES_PER_VIDEO``), each frame the largest image shrunk so
  that all frames keep within the video processor's max pixels (transformers' Qwen3-VL
  ``smart_resize`` for video). From 16,200 tokens of max_model_len: 24,576 frames of 32 x 32, 49,152
  patches, 12,288 embeddings, counted as 153,600 tokens (vLLM 0.11.0 logs that budget);
- 0.11.0 to 0.11.2 pad the cached embeddings with zeros to the encoder budget when they are fewer
  (gpu_model_runner.py profile_run): 153,600 rows of (1 + 3) x out_hidden_size for that video, beside
  the last item's own output, which the loop's variable keeps alive through the text pass;
- 0.13 and 0.14 count the video at its 12,288 embeddings, fewer than the image's 16,384: the
  image is profiled.

Qwen2-VL's and Qwen2.5-VL's video frames are each sized as the largest image, so from 32,768
tokens of max_model_len (16,384 a frame pair) a dummy video outweighs the image and is profiled:
at most 16 frames through 0.10.2, 14 from 0.11.0 (``_MAX_FRAMES_PER_VIDEO``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

from kvcalc._record import record
from kvcalc.specs.model import ModelSpec, VisionTower

VisionProfile = Literal["none", "each", "concat", "fused", "fused-ir"]
FUSED = ("fused", "fused-ir")
"""0.15 and later: q and k rotated in 16 bits by a kernel, no all-gather, a compiled SiLU-and-mul."""
F32 = 4
B16 = 2


@record(frozen=True)
class EncoderProfile:
    """The encoder's share of a V1 profile run."""

    items: int
    """Dummy items of the largest size in the profile's batch."""
    patches: int
    peak_bytes: int
    """The encoder phase's peak: pixels, rotary tables and the widest moment of one block."""
    held_bytes: int
    """What stays alive through the text pass: the dummy pixels and the cached embeddings."""
    units: Fraction
    """The widest moment of one block, in patches' hidden states."""
    modality: Literal["image", "video"] = "image"
    """What the profile encodes: 'image', or 'video' (Qwen3-VL under 0.11 and 0.12; Qwen2-VL and
    Qwen2.5-VL where max_model_len holds more than one frame pair)."""
    budget: int = 0
    """The encoder budget in tokens, as vLLM logs it."""
    padded: bool = False
    """The cached embeddings were padded to the budget (0.11.x, where they are fewer)."""


def block_units(v: VisionTower, style: VisionProfile, tp: int) -> Fraction:
    """The widest live set of one Qwen2-VL, Qwen2.5-VL or Qwen3-VL vision block, in units of one
    patch's hidden state, exactly (see the module's docstring for each term)."""
    i = Fraction(v.intermediate_size, v.hidden_size)
    if style in FUSED:
        # The caller's block input and the norm's output (2), qkv (3/tp), q and k made contiguous (2/tp),
        # their rotation (2/tp), the attention's output and its contiguous copy (2/tp); or, at the output
        # projection, the last of those and the projection's whole output (3 + 8/tp).
        attention = max(2 + Fraction(9, tp), 3 + Fraction(8, tp))
        if v.encoder == "qwen3_vl":
            # The block's input, the attention's sum and its LayerNorm, fc1 (i/tp) and its GELU (i/tp).
            return max(attention, 3 + 2 * i / tp)
        # Qwen2.5-VL: the block's input, the attention's output, the fused norm's residual and output
        # (4), gate-and-up (2i/tp), the compiled SiLU-and-mul (i/tp) and the down projection (1); and
        # the native fused add-and-norm in float32 beside the block's input and the attention's output:
        # its input and the residual upcast and their sum (0.21 and later: 2 + 2 + 2 + 2), or the sum
        # of the input upcast and the 16-bit residual (0.15: 2 + 2 + 2 + 1 after the add).
        return max(attention, 5 + 3 * i / tp, Fraction(8 if style == "fused-ir" else 7))
    rotary = 11 if style == "each" else 18
    attention = 2 + Fraction(rotary, tp)
    if tp > 1:
        attention = max(attention, 2 + Fraction(3, tp) + 6)
    if v.encoder in ("qwen2_vl", "qwen3_vl"):
        # The block's input, the attention's sum and its norm, fc1 (i/tp) and its QuickGELU (i/tp).
        mlp = 3 + 2 * i / tp
    else:
        # The block's input, the attention's sum and its norm (or the fused norm's two), the
        # gate-and-up projection (2i/tp) and its activation (i/tp).
        mlp = 4 + 3 * i / tp
    return max(attention, mlp)


def modelled(model: ModelSpec, style: VisionProfile) -> bool:
    """Whether kvcalc models this model's encoder profile under a release of this ``style``: from
    0.15, Qwen2.5-VL's and Qwen3-VL's (Qwen2-VL's ViT there, with its all-gather, is not counted)."""
    v = model.vision
    return v is not None and style != "none" and not (style in FUSED and v.encoder == "qwen2_vl")


QWEN3_MAX_FRAMES = 24_576
"""vLLM's cap on a dummy video's frames for Qwen3-VL (qwen3_vl.py _MAX_FRAMES_PER_VIDEO, 0.11.0 to 0.14.0)."""
VIDEO_TOKEN_FORMAT = Fraction(25, 2)
"""A Qwen3-VL video token as the prompt formats it, on average ("<{timestamp} seconds>" and three
tokens more: 12.5, qwen3_vl.py get_max_video_tokens, 0.11.0 to 0.12.0)."""


def _video_frame_side(v: VisionTower, frames: int) -> int:
    """The side of each frame of a dummy video of ``frames`` frames: the largest image's side, shrunk
    for Qwen3-VL when all frames together exceed the video processor's max pixels (transformers 4.57,
    qwen3_vl/video_processing_qwen3_vl.py smart_resize; factor patch x merge). Qwen2-VL's and
    Qwen2.5-VL's frames keep the largest image's size (qwen2_vl.py _get_vision_info resizes each
    frame as an image)."""
    side = math.isqrt(v.max_image_tokens) * v.patch_size * v.spatial_merge_size
    factor = v.patch_size * v.spatial_merge_size
    t = v.temporal_patch_size
    h_bar = round(side / factor) * factor
    t_bar = round(frames / t) * t
    if v.max_video_pixels and t_bar * h_bar * h_bar > v.max_video_pixels:
        beta = math.sqrt(frames * side * side / v.max_video_pixels)
        h_bar = max(factor, math.floor(side / beta / factor) * factor)
    return h_bar


def video_patches(v: VisionTower, frames: int) -> int:
    """Patches of a dummy video of ``frames`` frames (frames padded to the temporal patch)."""
    side = _video_frame_side(v, frames)
    t = v.temporal_patch_size
    grid_t = max((frames + frames % t) // t, 1)
    return grid_t * (side // v.patch_size) ** 2


def dummy_video_frames(v: VisionTower, max_model_len: int, cap: int, less_image: bool = False) -> int:
    """The frames of vLLM's dummy video (qwen2_vl.py _get_max_video_frames and
    get_num_frames_with_most_features): one more while the next count's embeddings stay within
    max_model_len, at most ``cap`` (Qwen2-VL's _MAX_FRAMES_PER_VIDEO of the release; Qwen3-VL's own
    24,576, from 2 frames). ``less_image`` (0.9.0.1 to 0.10.1.1): within max_model_len less one
    image's tokens, counted from 0; from 0.10.2, from 1. At least 1."""
    merge = v.spatial_merge_size**2
    if v.encoder == "qwen3_vl":
        n, cap, room = 2, QWEN3_MAX_FRAMES, max_model_len
    else:
        n, room = (0, max_model_len - v.max_image_tokens) if less_image else (1, max_model_len)
    while n < cap and video_patches(v, n + 1) // merge <= room:
        n += 1
    return max(n, 1)


def encoder_profile(
    model: ModelSpec,
    style: VisionProfile,
    tp: int,
    batched_tokens: int,
    max_model_len: int = 0,
    padded: bool = False,
    video_formatted: bool = False,
    video_cap: int = 0,
    video_less_image: bool = False,
) -> EncoderProfile | None:
    """The encoder's profile for ``model`` under a release whose ViT code is ``style``; None where
    kvcalc does not model it (no vision geometry, or a release it has not read).

    The batch: the modality whose item counts the most tokens, an image or, where the release's
    dummy video is modelled (``video_cap``, its frames for Qwen2-VL and Qwen2.5-VL), a video (a
    Qwen3-VL video counted formatted where the release does, ``video_formatted``); a tie goes to the
    image. The encoder budget is max(max_num_batched_tokens, that item's tokens), and it holds budget
    // item tokens items (v1/worker/gpu_model_runner.py profile_run, 0.10.0; v1/worker/utils.py
    MultiModalBudget.get_max_items, 0.10.2 to 0.14.0; 0.9.0.1 rounds up, which differs only for
    budgets above one item that are not a multiple of it). Where the release pads the cached
    embeddings to the budget (``padded``), they hold the budget's rows."""
    v = model.vision
    if v is None or not modelled(model, style):
        return None
    per_image = v.max_image_tokens
    modality: Literal["image", "video"] = "image"
    per_item, rows, patches_each = per_image, per_image, v.patches_per_image
    if video_cap and max_model_len:
        vp = video_patches(v, dummy_video_frames(v, max_model_len, video_cap, video_less_image))
        tokens = vp // v.spatial_merge_size**2
        counted = int(tokens * VIDEO_TOKEN_FORMAT) if video_formatted and v.encoder == "qwen3_vl" else tokens
        if counted > per_image:
            modality, per_item, rows, patches_each = "video", counted, tokens, vp
    budget = max(batched_tokens, per_item)
    items = budget // per_item
    patches = items * patches_each
    head_dim = v.hidden_size // v.num_heads
    units = block_units(v, style, tp)
    width = v.embedding_width * B16
    # The rotary position table (float32, head_dim / 2 a patch) and its cos and sin; from 0.15 the cos and
    # sin alone, gathered from the rotary embedding's 16-bit cache.
    rotary = 2 * (head_dim // 2) * B16 if style in FUSED else 3 * (head_dim // 2) * F32
    # The deepstack mergers' outputs stay alive through the last blocks.
    deepstack = items * rows * v.out_hidden_size * v.deepstack * B16
    # Whole bytes: a fractional share of hidden states a patch (3/tp ...) rounds down over all patches.
    peak = patches * (v.pixel_bytes_per_patch + rotary) + int(patches * units * v.hidden_size * B16) + deepstack
    embeddings = items * rows * width
    pad = padded and items * rows < budget
    if pad:
        # The padded copy the cache holds, and the last item's own output, which the loop's variable keeps.
        embeddings = budget * width + rows * width
    held = patches * v.pixel_bytes_per_patch + embeddings
    return EncoderProfile(items, patches, peak, held, units, modality=modality, budget=budget, padded=pad)
