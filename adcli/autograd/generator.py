"""`torch.Generator` as scripts see it: the engine of adcli/autograd/random.py with
PyTorch's methods (`manual_seed`, `seed`, `initial_seed`, `get_state`/`set_state`,
`device`), its repr and its errors, and the check every `generator=` argument gets."""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from . import dtypes
from . import random as rng
from .device import CPU, check_device, parse_device
from .tensor import Tensor

__all__ = ["Generator", "check_generator", "pick"]

CUDA_GENERATOR_MISSING = (
    "Cannot get CUDA generator without ATen_cuda library. PyTorch splits its backend into "
    "two shared libraries: a CPU library and a CUDA library; this error has occurred because "
    "you are trying to use some CUDA functionality, but the CUDA library has not been loaded "
    "by the dynamic linker for some reason.  The CUDA library MUST be loaded, EVEN IF you "
    "don't directly use any symbols from the CUDA library! One common culprit is a lack of "
    "-Wl,--no-as-needed in your link arguments; many dynamic linkers will delete dynamic "
    "library dependencies if you don't depend on any of their symbols.  You can check if "
    "this has occurred by using ldd on your binary to see if there is a dependency on "
    "*_cuda.so library."
)


class Generator(rng.Generator):
    """`torch.Generator(device='cpu')`: seeded with PyTorch's default seed
    (67280421310721) until `manual_seed` or `seed` is called."""

    __ad_attrs__ = frozenset(
        {"manual_seed", "seed", "initial_seed", "get_state", "set_state", "device"}
    )

    def __init__(self, device: Any = "cpu") -> None:
        d = parse_device(device)  # PyTorch's errors for a device index or a bad string
        if d.type == "cuda":
            raise RuntimeError(CUDA_GENERATOR_MISSING)
        check_device(d)
        super().__init__()

    def manual_seed(self, seed: Any) -> Generator:
        """Seed the generator; return it (so `torch.Generator().manual_seed(s)` chains)."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            name = "Tensor" if isinstance(seed, Tensor) else type(seed).__name__
            raise RuntimeError(f"manual_seed expected a long, but got {name}")
        super().manual_seed(int(seed))
        return self

    def seed(self) -> int:
        """Seed with a fresh non-deterministic 64-bit number and return it."""
        value = secrets.randbits(64)
        super().manual_seed(value)
        return value

    def get_state(self) -> Tensor:  # type: ignore[override]
        """The state as PyTorch's 5056-byte `torch.uint8` tensor (same bytes)."""
        data = np.frombuffer(self.state_bytes(), dtype=np.uint8).copy()
        return Tensor._make(data)

    def set_state(self, new_state: Any) -> Generator:  # type: ignore[override]
        """Restore a state from `get_state` (also one made by PyTorch itself)."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {_type_name(new_state)}")
        if new_state.dtype is not dtypes.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        self.set_state_bytes(np.ascontiguousarray(new_state.data_).tobytes())
        return self

    @property
    def device(self) -> Any:
        """Always the CPU."""
        return CPU

    def __repr__(self) -> str:
        return f"<torch._C.Generator object at {id(self):#x}>"


def _type_name(value: Any) -> str:
    return "Tensor" if isinstance(value, Tensor) else type(value).__name__


def check_generator(fn: str, generator: Any) -> None:
    """PyTorch's TypeError for a `generator=` that is not a torch.Generator."""
    if generator is not None and not isinstance(generator, rng.Generator):
        raise TypeError(
            f"{fn}(): argument 'generator' must be torch.Generator, not {_type_name(generator)}"
        )


def pick(fn: str, generator: Any) -> rng.Generator:
    """The generator to draw from: `generator`, checked, or the default one."""
    check_generator(fn, generator)
    return generator if generator is not None else rng.default_generator


# The process-wide generator (torch.default_generator, what torch.manual_seed returns)
# gets the script-facing methods and repr too: the subclass adds no state of its own.
rng.default_generator.__class__ = Generator
Generator.__module__ = "torch._C"  # printed as PyTorch's class
