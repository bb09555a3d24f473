"""The C allocator's settings for a process that runs scripts.

glibc's malloc returns each freed block of 128 KiB or more to the kernel (its
`mmap` threshold, raised only by what it has already freed, and the heap trimmed
above 128 KiB of free space). Every kernel step of a script makes and frees such
temporaries (float64 intermediates of a float32 update, a gradient the size of a
weight matrix), so each allocation faulted its pages in again: in the training
benchmark the page faults took longer than the arithmetic (a 784x128 SGD update,
0.83 ms with them and 0.15 ms without). Keeping freed blocks up to 32 MiB in the
heap, and up to 128 MiB of free heap before trimming, makes them reusable.
"""

from __future__ import annotations

import ctypes
import functools

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 << 20  # glibc's largest allowed value on 64-bit machines
_TRIM_THRESHOLD = 128 << 20


@functools.cache
def keep_freed_memory() -> bool:
    """Tune glibc's malloc (once per process) so freed large arrays are reused rather
    than unmapped; False where the C library has no `mallopt` (not glibc)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(
        mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    )
