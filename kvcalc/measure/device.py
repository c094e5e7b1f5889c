"""What the measurement runs on: the kernels by name and the memory free on the device. Shared by
run (one attention step) and full (the whole step), neither importing the other's internals."""

from __future__ import annotations

from typing import Any


def _kernel(name: str, cache: Any, sms: int) -> Any:
    from kvcalc.measure import kernels as K

    return {
        "cpu-paged": K.cpu_paged,
        "sdpa-dense": K.dense_sdpa,
        "gather-sdpa": K.gather_sdpa,
        "triton-paged": lambda c: K.triton_paged(c, sms=sms),
    }[name](cache)


def _free_bytes(device: str) -> int:
    import os

    if device == "cuda":
        import torch

        return torch.cuda.mem_get_info()[0]
    # MemAvailable counts the page cache the kernel gives back on demand; the free pages alone
    # (SC_AVPHYS_PAGES) fall to a few per cent of memory on a machine that has read a lot of files.
    try:
        with open("/proc/meminfo") as f:
            avail = available_from_meminfo(f.read())
        if avail is not None:
            return avail
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 8 * 2**30


def available_from_meminfo(text: str) -> int | None:
    """Bytes of MemAvailable in a /proc/meminfo text (given in kB), or None if it has none."""
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return None
