"""How many blocks of SGLang's grouped Triton decode kernel one multiprocessor runs at once
(kvcalc.engine.steptime.TRITON_BLOCKS_PER_SM), from the released kernel compiled, without a GPU.

Needs triton==3.5.0 (the version SGLang 0.5.6's torch 2.9.1 pins; it ships ptxas) and the kernel's file from
SGLang's wheel, which kvcalc does not carry:

    pip download --no-deps sglang==0.5.6 && unzip -o sglang-0.5.6-*.whl 'sglang/srt/layers/attention/triton_ops/*'
    python bench/triton_decode_occupancy.py sglang/srt/layers/attention/triton_ops/decode_attention.py

SGLang 0.4.1 to 0.4.4's kernel (a fixed NUM_KV_SPLITS, 8 on CUDA; compiled with triton==3.1.0, which their torch
2.5.1 pins) is read the same way: its file from `pip download --no-deps sglang==0.4.2.post4`, the constants it
does not take left out (kvcalc.engine.steptime.FIXED_TRITON_MLA_BLOCKS).

For each tile the kernel takes (_decode_grouped_att_m_fwd: BLOCK_DMODEL, BLOCK_DPE, BLOCK_DV; 32 tokens a tile,
16 query heads a block, 4 warps, 2 stages), it compiles _fwd_grouped_kernel_stage1 for sm_90a and sm_100a, runs
ptxas -v on its PTX for the registers a thread, reads the shared memory from the compiled metadata, and prints
blocks a multiprocessor = min(65,536 registers / (4 warps x a warp's registers, in units of 256), 233,472 B of
shared memory / (the block's + 1,024 reserved), 64 warps / 4).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import types

TILES = (
    (64, 0, 64, 64, 64),
    (128, 0, 128, 128, 128),
    (256, 0, 256, 256, 256),
    (256, 32, 256, 288, 256),
    (512, 64, 512, 576, 512),
)
"""(BLOCK_DMODEL, BLOCK_DPE, BLOCK_DV, Lk, Lv): GQA heads of 64, 128 and 256, MLA latents of 256 + 32 and 512 + 64."""
POINTERS = (
    "Q",
    "K_Buffer",
    "V_Buffer",
    "kv_indptr",
    "kv_indices",
    "Att_Out",
    "Att_Lse",
    "num_kv_splits",
    "Req_to_tokens",
    "B_req_idx",
    "B_Seqlen",
)


def load(path: str) -> types.ModuleType:
    # The file imports is_hip from sglang.srt.utils, which pulls in all of SGLang: a stand-in answers False.
    for name in ("sglang", "sglang.srt"):
        sys.modules.setdefault(name, types.ModuleType(name))
    utils = types.ModuleType("sglang.srt.utils")
    utils.is_hip = lambda: False  # type: ignore[attr-defined]
    sys.modules["sglang.srt.utils"] = utils
    spec = importlib.util.spec_from_file_location("decode_attention", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def source(ast_source, kernel, sig: dict[str, str], const: dict[str, object]):
    """The kernel with its constants, as this Triton's ASTSource takes them (3.1 keys by argument index and takes the
    constants apart; later releases take a signature by name with "constexpr" entries)."""
    import inspect

    if "constexprs" in inspect.signature(ast_source).parameters:
        return ast_source(fn=kernel, signature=sig, constexprs={(kernel.arg_names.index(k),): v for k, v in const.items()})
    index = kernel.arg_names.index
    return ast_source(
        fn=kernel,
        signature={index(k): t for k, t in sig.items() if t != "constexpr"},
        constants={index(k): v for k, v in const.items()},
    )


def compile_tile(kernel, tile: tuple[int, ...], cc: int) -> tuple[int, int]:
    import triton
    import triton.backends.nvidia as nv
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    dm, dpe, dv, lk, lv = tile
    mla = dpe > 0
    const = {
        "kv_group_num": 16 if mla else 4,
        "q_head_num": 16 if mla else 32,
        "BLOCK_DMODEL": dm,
        "BLOCK_DPE": dpe,
        "BLOCK_DV": dv,
        "BLOCK_N": 32,
        "BLOCK_H": 16,
        "MIN_BLOCK_KV": 32,
        "logit_cap": 0.0,
        "xai_temperature_len": -1,
        "NUM_KV_SPLITS": 8,
        "Lk": lk,
        "Lv": lv,
    }
    const = {k: v for k, v in const.items() if k in kernel.arg_names}  # (0.4.x: NUM_KV_SPLITS; 0.5.x: the others)
    sig = {}
    for name in kernel.arg_names:
        if name in const:
            sig[name] = "constexpr"
        elif name in POINTERS:
            sig[name] = (
                "*fp32"
                if name.startswith("Att_")
                else "*i32"
                if name in ("kv_indptr", "kv_indices", "num_kv_splits", "Req_to_tokens", "B_req_idx", "B_Seqlen")
                else "*bf16"
            )
        elif name == "sm_scale":
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
    out = triton.compile(
        source(ASTSource, kernel, sig, const), target=GPUTarget("cuda", cc, 32), options={"num_warps": 4, "num_stages": 2}
    )
    with tempfile.TemporaryDirectory() as d:
        ptx = os.path.join(d, "k.ptx")
        with open(ptx, "w") as fh:
            fh.write(out.asm["ptx"])
        ptxas = os.path.join(os.path.dirname(nv.__file__), "bin", "ptxas")
        r = subprocess.run(
            [ptxas, "-v", f"--gpu-name=sm_{cc}a", ptx, "-o", os.path.join(d, "k.cubin")], capture_output=True, text=True
        )
    line = next(x for x in (r.stdout + r.stderr).splitlines() if "registers" in x)
    return int(line.split("Used ")[1].split(" ")[0]), int(out.metadata.shared)


def blocks_per_sm(regs: int, shared: int, warps: int = 4) -> int:
    per_warp = -(-regs * 32 // 256) * 256
    return min(65536 // (per_warp * warps), 233472 // (shared + 1024), 64 // warps)


def main() -> None:
    import triton

    kernel = load(sys.argv[1])._fwd_grouped_kernel_stage1
    print(f"Triton {triton.__version__}")
    major, minor = (int(x) for x in triton.__version__.split(".")[:2])
    # (Triton 3.1 aborts on sm_100a: Blackwell came with a later release; 0.4.x's kernel is read on Hopper only)
    for cc in (90, 100) if (major, minor) >= (3, 3) else (90,):
        for tile in TILES:
            try:
                regs, shared = compile_tile(kernel, tile, cc)
            except Exception as e:  # (Triton 3.1 does not target sm_100a)
                print(f"sm_{cc}a tile {tile[:3]}: not compiled by this Triton ({type(e).__name__})")
                continue
            print(
                f"sm_{cc}a tile {tile[:3]}: {regs} registers a thread, {shared:,} B shared: {blocks_per_sm(regs, shared)} blocks a multiprocessor"
            )


if __name__ == "__main__":
    main()
