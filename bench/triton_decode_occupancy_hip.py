"""How many blocks of vLLM V0's grouped Triton MLA decode kernel one compute unit of a gfx942 GPU (MI300X, MI325X)
runs at once (kvcalc.engine.steptime.V0_TRITON_MLA_BLOCKS_PER_CU), from the released kernel compiled, without a GPU.

Needs a Triton with its AMD backend (the PyPI wheel carries it; 3.9 was used: the ROCm Triton that vLLM 0.7.3's
images ship is not on the package index) and the kernel's file from vLLM's wheel, which kvcalc does not carry:

    pip download --no-deps vllm==0.7.3 && unzip -o vllm-0.7.3-*.whl vllm/attention/ops/triton_decode_attention.py
    python bench/triton_decode_occupancy_hip.py vllm/attention/ops/triton_decode_attention.py

With --sglang it reads SGLang 0.4.2.post2 to 0.4.4.post1's kernel instead (kvcalc.engine.steptime.SGLANG_HIP_MLA_BLOCKS_PER_CU;
its launch: 16 tokens a tile, 16 query heads a block, 4 warps, 1 stage, waves_per_eu 1, 16 splits):

    pip download --no-deps sglang==0.4.2.post4 && unzip -o sglang-0.4.2.post4-*.whl 'sglang/srt/layers/attention/triton_ops/*'
    python bench/triton_decode_occupancy_hip.py --sglang sglang/srt/layers/attention/triton_ops/decode_attention.py

and prints the VGPRs the kernel descriptor asks for (.amdhsa_next_free_vgpr, architectural and accumulation
registers together), which the hardware allocates a wave: over 256, one wave a SIMD. Triton 3.1.0 (which those
releases' torch pins) needs a ROCm linker only to link, after the assembly is read: a stand-in that copies its input
serves (triton/backends/amd/llvm/bin/ld.lld, printing a version for --version).

It compiles _fwd_grouped_kernel_stage1 as _decode_grouped_att_m_fwd launches it on ROCm for a 576-wide MLA key
(BLOCK_DMODEL 512 + BLOCK_DPE 64, BLOCK_DV 512, 16 tokens a tile, 16 query heads a block, 4 warps, 2 stages,
waves_per_eu 4, matrix_instr_nonkdim 16, kpack 2) for gfx942 and prints the compiler's VGPRs, spills, LDS and
occupancy (waves a SIMD): blocks a compute unit = min(4 SIMDs x occupancy / 4 warps, 65,536 B of LDS / the block's).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import types


def load(path: str) -> types.ModuleType:
    # vLLM's file asks vllm.platforms whether it runs on ROCm, SGLang's sglang.srt.utils.is_hip: stand-ins answer True.
    for name in ("vllm", "vllm.platforms", "sglang", "sglang.srt"):
        sys.modules.setdefault(name, types.ModuleType(name))
    rocm = types.SimpleNamespace(is_rocm=lambda: True)
    sys.modules["vllm.platforms"].current_platform = rocm  # type: ignore[attr-defined]
    utils = types.ModuleType("sglang.srt.utils")
    utils.is_hip = lambda: True  # type: ignore[attr-defined]
    sys.modules["sglang.srt.utils"] = utils
    spec = importlib.util.spec_from_file_location("triton_decode_attention", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from triton_decode_occupancy import source  # (this Triton's ASTSource, as the CUDA script builds it)

    sglang = sys.argv[1] == "--sglang"
    kernel = load(sys.argv[-1])._fwd_grouped_kernel_stage1
    const: dict[str, object] = {
        "kv_group_num": 16,
        "q_head_num": 16,
        "BLOCK_DMODEL": 512,
        "BLOCK_DPE": 64,
        "BLOCK_DV": 512,
        "BLOCK_N": 16,
        "BLOCK_H": 16,
        "NUM_KV_SPLITS": 16 if sglang else 4,
        "PAGE_SIZE": 16,
        "logit_cap": 0.0,
        "Lk": 576,
        "Lv": 512,
    }
    const = {k: v for k, v in const.items() if k in kernel.arg_names}  # (SGLang's takes no PAGE_SIZE)
    sig = {}
    for name in kernel.arg_names:
        if name in const:
            sig[name] = "constexpr"
        elif name in ("Q", "K_Buffer", "V_Buffer"):
            sig[name] = "*bf16"
        elif name == "Att_Out":
            sig[name] = "*fp32"
        elif name in ("Req_to_tokens", "B_Seqlen", "kv_indptr", "kv_indices", "B_req_idx"):
            sig[name] = "*i32"
        elif name == "sm_scale":
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
    stages, waves = (1, 1) if sglang else (2, 4)
    options = {"num_warps": 4, "num_stages": stages, "waves_per_eu": waves, "matrix_instr_nonkdim": 16, "kpack": 2}
    out = triton.compile(source(ASTSource, kernel, sig, const), target=GPUTarget("hip", "gfx942", 64), options=options)
    asm = out.asm["amdgcn"]

    def field(key: str) -> int:
        m = re.search(r"[;.\s]" + key + r"[:=\s]+(\d+)", asm)
        return int(m.group(1)) if m else -1

    # The VGPRs a wave is allocated (architectural and accumulation together), 512 a SIMD lane: waves a SIMD.
    allocated = field("amdhsa_next_free_vgpr")
    by_vgprs = 512 // max(-(-allocated // 8) * 8, 1) if allocated > 0 else field("Occupancy")
    occupancy, lds = min(by_vgprs, 8), int(out.metadata.shared)
    blocks = min(4 * occupancy // 4, 65536 // max(lds, 1))
    arch = field("NumVgprs")
    print(
        f"Triton {triton.__version__} gfx942: {arch if arch >= 0 else 'n/a'} VGPRs ({allocated} allocated), "
        f"{field('vgpr_spill_count')} spilled, {lds:,} B LDS, occupancy {occupancy} waves a SIMD: {blocks} blocks a compute unit"
    )


if __name__ == "__main__":
    main()
