"""How many blocks of vLLM V0's grouped Triton MLA decode kernel one compute unit of a gfx942 GPU (MI300X, MI325X)
runs at once (kvcalc.engine.steptime.V0_TRITON_MLA_BLOCKS_PER_CU), from the released kernel compiled, without a GPU.

Needs a Triton with its AMD backend (the PyPI wheel carries it; 3.9 was used: the ROCm Triton that vLLM 0.7.3's
images ship is not on the package index) and the kernel's file from vLLM's wheel, which kvcalc does not carry:

    pip download --no-deps vllm==0.7.3 && unzip -o vllm-0.7.3-*.whl vllm/attention/ops/triton_decode_attention.py
    python bench/triton_decode_occupancy_hip.py vllm/attention/ops/triton_decode_attention.py

It compiles _fwd_grouped_kernel_stage1 as _decode_grouped_att_m_fwd launches it on ROCm for a 576-wide MLA key
(BLOCK_DMODEL 512 + BLOCK_DPE 64, BLOCK_DV 512, 16 tokens a tile, 16 query heads a block, 4 warps, 2 stages,
waves_per_eu 4, matrix_instr_nonkdim 16, kpack 2) for gfx942 and prints the compiler's VGPRs, spills, LDS and
occupancy (waves a SIMD): blocks a compute unit = min(4 SIMDs x occupancy / 4 warps, 65,536 B of LDS / the block's).
"""

from __future__ import annotations

import importlib.util
import re
import sys
import types


def load(path: str) -> types.ModuleType:
    # The file asks vllm.platforms whether it runs on ROCm: a stand-in answers True.
    for name in ("vllm", "vllm.platforms"):
        sys.modules.setdefault(name, types.ModuleType(name))
    rocm = types.SimpleNamespace(is_rocm=lambda: True)
    sys.modules["vllm.platforms"].current_platform = rocm  # type: ignore[attr-defined]
    spec = importlib.util.spec_from_file_location("triton_decode_attention", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel = load(sys.argv[1])._fwd_grouped_kernel_stage1
    const = {
        "kv_group_num": 16,
        "q_head_num": 16,
        "BLOCK_DMODEL": 512,
        "BLOCK_DPE": 64,
        "BLOCK_DV": 512,
        "BLOCK_N": 16,
        "BLOCK_H": 16,
        "NUM_KV_SPLITS": 4,
        "PAGE_SIZE": 16,
        "logit_cap": 0.0,
        "Lk": 576,
        "Lv": 512,
    }
    sig = {}
    for name in kernel.arg_names:
        if name in const:
            sig[name] = "constexpr"
        elif name in ("Q", "K_Buffer", "V_Buffer"):
            sig[name] = "*bf16"
        elif name == "Att_Out":
            sig[name] = "*fp32"
        elif name in ("Req_to_tokens", "B_Seqlen"):
            sig[name] = "*i32"
        elif name == "sm_scale":
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
    src = ASTSource(fn=kernel, signature=sig, constexprs={(kernel.arg_names.index(k),): v for k, v in const.items()})
    options = {"num_warps": 4, "num_stages": 2, "waves_per_eu": 4, "matrix_instr_nonkdim": 16, "kpack": 2}
    out = triton.compile(src, target=GPUTarget("hip", "gfx942", 64), options=options)
    asm = out.asm["amdgcn"]

    def field(key: str) -> int:
        m = re.search(r"[;.\s]" + key + r"[:=\s]+(\d+)", asm)
        return int(m.group(1)) if m else -1

    occupancy, lds = field("Occupancy"), int(out.metadata.shared)
    blocks = min(4 * occupancy // 4, 65536 // max(lds, 1))
    print(
        f"Triton {triton.__version__} gfx942: {field('NumVgprs')} VGPRs, {field('vgpr_spill_count')} spilled, "
        f"{lds:,} B LDS, occupancy {occupancy} waves a SIMD: {blocks} blocks a compute unit"
    )


if __name__ == "__main__":
    main()
