"""Fixtures of the torch comparisons: torch's thread count set to the one adcli models.

Some kernels split their work by thread count (sums and aranges from 32,768
elements, float64 softmax along an inner dim, layer norm's weight gradient, batch
norm's 2-d statistics, MKL's matrix products), and other test modules pin torch to
one thread: a module that compares bits asks for one of these with
`pytest.mark.usefixtures`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


def _with_threads(n: int) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def torch_threads_as_adcli() -> Iterator[None]:
    """torch runs with the thread count adcli's own kernels model."""
    from adcli.autograd.summation import threads

    yield from _with_threads(threads())


@pytest.fixture
def torch_threads_as_mkl() -> Iterator[None]:
    """torch runs with MKL's thread count (adcli's own where MKL is not loaded; one
    where libgomp is missing and MKL runs sequentially)."""
    from adcli.autograd import mkl
    from adcli.autograd.summation import threads

    lib = mkl.library()
    yield from _with_threads(lib.threads if lib is not None else threads())
