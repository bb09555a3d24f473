"""`torch.device` and the CPU-only rules: adcli has one device, the CPU.

Scripts written for GPUs name devices everywhere (`device=`, `.to(device)`,
`.cuda()`); a device object prints as PyTorch's (`device(type='cpu')`), the
CPU is accepted wherever PyTorch accepts a device, and any other device
fails with the error a CPU-only build of PyTorch 2.13 gives.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["CPU", "CUDA_MISSING", "Device", "check_device", "parse_device"]

CUDA_MISSING = "Torch not compiled with CUDA enabled"

# The device types PyTorch's parser knows, in the order its error lists them.
KNOWN_TYPES = (
    "cpu cuda ipu xpu mkldnn opengl opencl ideep hip ve fpga maia xla lazy vulkan mps meta "
    "hpu mtia privateuseone"
).split()

_DEVICE_STRING = re.compile(r"([a-z_]+)(?::(\d+))?")


class Device:
    """`torch.device(type, index=None)`: immutable, compared by type and index."""

    __slots__ = ("_type", "_index")
    __ad_attrs__ = frozenset({"type", "index"})

    def __init__(self, type: Any = None, index: Any = None) -> None:  # noqa: A002 - torch's name
        if isinstance(type, Device) and index is None:
            kind, idx = type._type, type._index
        elif isinstance(type, str):
            kind, idx = _parse(type)
            if index is not None:
                if idx is not None:
                    raise RuntimeError(
                        "type (string) must not include an index because index was passed "
                        "explicitly: " + type
                    )
                if isinstance(index, bool) or not isinstance(index, int):
                    raise TypeError(
                        "device(): argument 'index' (position 2) must be int, not "
                        f"{_type_name(index)}"
                    )
                if index < 0:
                    raise RuntimeError("Device index must not be negative")
                idx = index
        elif isinstance(type, int) and not isinstance(type, bool) and index is None:
            # a bare index means "the current accelerator", and there is none
            raise RuntimeError("Cannot access accelerator device when none is available.")
        else:
            got = _type_name(type) if index is None else f"{_type_name(type)}, {_type_name(index)}"
            raise TypeError(
                f"device() received an invalid combination of arguments - got ({got}), but "
                "expected one of:\n * (torch.device device)\n      didn't match because some of "
                f"the arguments have invalid types: (!{_type_name(type)}!)\n"
                " * (str type, int index = -1)\n"
            )
        object.__setattr__(self, "_type", kind)
        object.__setattr__(self, "_index", idx)

    @property
    def type(self) -> str:
        """The device type: "cpu", "cuda"..."""
        return self._type

    @property
    def index(self) -> int | None:
        """The device index, or None."""
        return self._index

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"attribute '{name}' of 'torch.device' objects is not writable")

    def __repr__(self) -> str:
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __str__(self) -> str:
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Device):
            return False
        return (self._type, self._index) == (other._type, other._index)

    def __hash__(self) -> int:
        return hash((self._type, self._index))


Device.__name__ = Device.__qualname__ = "device"
Device.__module__ = "torch"


def _type_name(v: Any) -> str:
    return "NoneType" if v is None else type(v).__name__


def _parse(text: str) -> tuple[str, int | None]:
    if not text:
        raise RuntimeError("Device string must not be empty")
    m = _DEVICE_STRING.fullmatch(text)
    if m is None or m.group(1) not in KNOWN_TYPES:
        if m is None and text.split(":")[0] in KNOWN_TYPES:
            raise RuntimeError(f"Invalid device string: '{text}'")
        raise RuntimeError(
            f"Expected one of {', '.join(KNOWN_TYPES)} device type at start of device string: "
            f"{text}"
        )
    idx = m.group(2)
    return m.group(1), None if idx is None else int(idx)


CPU = Device("cpu")


def parse_device(device: Any) -> Device:
    """A `Device` from what a script passes as `device=` (a string, a device or an index)."""
    return device if isinstance(device, Device) else Device(device)


def check_device(device: Any) -> None:
    """Accept None and the CPU; fail, as a CPU-only PyTorch does, for any other device."""
    if device is None:
        return
    d = parse_device(device)
    if d.type == "cpu":
        return
    raise unavailable(d)


def unavailable(d: Device) -> BaseException:
    """The error PyTorch's CPU build gives for moving data to device `d`."""
    if d.type == "cuda":
        return AssertionError(CUDA_MISSING)
    if d.type == "xpu":
        return AssertionError("Torch not compiled with XPU enabled")
    if d.type == "mps":
        return RuntimeError("PyTorch is not linked with support for mps devices")
    return RuntimeError(f"adcli runs on the CPU only: device '{d}' is not available")
