"""adcli's autograd engine: NumPy tensors that record operations, PyTorch's reverse and
forward modes over them. It imports nothing of adcli outside this package.

The core is layered, each module importing only the ones before it:

    node -> tensor -> ops -> functions -> normalization, legacy, engine, forward_ad
    -> batched
    -> vmapping -> func

Where a lower module calls up (a Tensor method runs an op, an op runs a Function row,
`x.backward()` runs the engine), it goes through a module slot that the higher module
fills as it loads (`tensor.ops`, `ops.F`, `tensor.engine`, `ops.BATCHED`, ...). Loading
them all here means importing any part of the package wires the whole core.
"""

from . import (
    batched,
    conv,
    convops,
    einsum,
    engine,
    forward_ad,
    functions,
    legacy,
    node,
    normalization,
    ops,
    pooling,
    profiler,
    statsops,
    tensor,
    vmapping,
)

__all__ = [
    "batched",
    "conv",
    "convops",
    "einsum",
    "engine",
    "forward_ad",
    "functions",
    "legacy",
    "node",
    "normalization",
    "ops",
    "pooling",
    "profiler",
    "statsops",
    "tensor",
    "vmapping",
]
