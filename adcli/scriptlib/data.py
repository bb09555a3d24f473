"""`torch.utils.data` for scripts: `Dataset` (a base scripts may derive from, with
`__len__` and `__getitem__`), `TensorDataset`, `Subset`, `random_split` and a
single-process `DataLoader` (batch_size, shuffle, drop_last, collate_fn, generator).

Batches are PyTorch's default collation (tensors stacked, numbers made tensors, tuples
made lists), and the random numbers are PyTorch's: each `iter(loader)` draws one
int64 from the loader's generator (PyTorch's worker base seed, drawn even without
shuffling); a shuffling loader then draws a second one, at its first batch, to seed
the Generator whose `randperm` orders that epoch."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from adcli.autograd import ops
from adcli.autograd import random as rng
from adcli.autograd.config import config as _config
from adcli.autograd.generator import Generator
from adcli.autograd.tensor import Tensor


def _draw_seed(generator: Any) -> int:
    """`torch.empty((), dtype=torch.int64).random_(generator=g).item()`: a 64-bit draw
    taken modulo 2**63."""
    gen = generator if generator is not None else rng.default_generator
    return int(gen._random64(1)[0]) % (1 << 63)


class Dataset:
    """The base of map-style datasets: a script's class defines `__getitem__` (and
    `__len__`, which DataLoader needs)."""

    __ad_subclass__ = True
    __ad_attrs__ = frozenset()

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")


class TensorDataset(Dataset):
    """Samples as tuples of the tensors' rows (all tensors the same length)."""

    __ad_attrs__ = frozenset({"tensors"})

    def __init__(self, *tensors: Tensor) -> None:
        for t in tensors:
            if not isinstance(t, Tensor):
                raise AttributeError(f"'{type(t).__name__}' object has no attribute 'size'")
        if tensors and any(t.data_.shape[:1] != tensors[0].data_.shape[:1] for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        if tensors and tensors[0].data_.ndim == 0:
            raise IndexError("dimension specified as 0 but tensor has no dimensions")
        self.tensors = tuple(tensors)

    def __getitem__(self, index: Any) -> tuple[Any, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].data_.shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`."""

    __ad_attrs__ = frozenset({"dataset", "indices"})

    def __init__(self, dataset: Any, indices: Any) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Any, lengths: Any, generator: Any = None) -> list[Subset]:
    """Non-overlapping random subsets of the given lengths (or fractions summing to 1),
    in the order `randperm(len(dataset), generator=generator)` gives."""
    lengths = list(lengths)
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(math.floor(n * frac))
        for i in range(n - sum(sizes)):  # the remainder, one each, round-robin
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                _config.warn(
                    f"Length of split at index {i} is 0. This might result in an empty dataset."
                )
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    gen = generator if generator is not None else rng.default_generator
    order = [int(i) for i in gen.randperm(n)]
    out, offset = [], 0
    for size in lengths:
        out.append(Subset(dataset, order[offset : offset + size]))
        offset += size
    return out


def default_collate(batch: list[Any]) -> Any:
    """PyTorch's default collation of a list of samples into a batch."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        shapes = {tuple(t.data_.shape) for t in batch}
        if len(shapes) > 1:
            sizes = [list(t.data_.shape) for t in batch]
            first = next(s for s in sizes if s != sizes[0])
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {sizes[0]} at entry 0 "
                f"and {first} at entry {sizes.index(first)}"
            )
        return ops.stack(list(batch), 0)
    if isinstance(elem, (bool, np.bool_)):
        return ops.tensor(list(batch))
    if isinstance(elem, (float, np.floating)):
        return ops.tensor([float(v) for v in batch], dtype=ops.dtypes.float64)
    if isinstance(elem, (int, np.integer)):
        return ops.tensor([int(v) for v in batch])
    if isinstance(elem, str):
        return list(batch)
    if isinstance(elem, dict):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, (tuple, list)):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(column)) for column in zip(*batch, strict=True)]
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(elem)}"
    )


def default_convert(item: Any) -> Any:
    """What an unbatched loader (batch_size=None) yields: tuples made lists, as PyTorch's
    default_convert does."""
    if isinstance(item, (tuple, list)):
        return [default_convert(v) for v in item]
    if isinstance(item, dict):
        return {k: default_convert(v) for k, v in item.items()}
    return item


class DataLoader:
    """Batches of a map-style dataset, in order or shuffled (one process)."""

    __ad_attrs__ = frozenset(
        {"dataset", "batch_size", "drop_last", "generator", "collate_fn", "num_workers"}
    )

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Any = None,
        batch_sampler: Any = None,
        num_workers: int = 0,
        collate_fn: Any = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Any = None,
        multiprocessing_context: Any = None,
        generator: Any = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable "
                "multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if sampler is not None or batch_sampler is not None:
            raise NotImplementedError(
                "adcli's DataLoader has no custom samplers: use shuffle=True or shuffle=False"
            )
        if batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last"
            )
        if generator is not None and not isinstance(generator, rng.Generator):
            raise TypeError(f"generator must be a torch.Generator, not {type(generator).__name__}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.drop_last = drop_last
        self.collate_fn = collate_fn
        self.generator = generator
        self.num_workers = num_workers  # (loaded in this process whatever it says)

    def _order(self) -> Iterator[int]:
        """The sample indices of one epoch (a shuffle draws its seed at the first)."""
        n = len(self.dataset)
        if not self.shuffle:
            yield from range(n)
            return
        gen = self.generator
        if gen is None:
            gen = Generator()
            gen.manual_seed(_draw_seed(None))
        yield from (int(i) for i in gen.randperm(n))

    def _batches(self) -> Iterator[Any]:
        order = self._order()
        if self.batch_size is None:
            for i in order:
                item = self.dataset[i]
                yield default_convert(item) if self.collate_fn is None else self.collate_fn(item)
            return
        collate = self.collate_fn or default_collate
        while True:
            indices = []
            for i in order:
                indices.append(i)
                if len(indices) == self.batch_size:
                    break
            if not indices or (self.drop_last and len(indices) < self.batch_size):
                return
            yield collate([self.dataset[i] for i in indices])

    def __iter__(self) -> _LoaderIter:
        return _LoaderIter(self)

    def __len__(self) -> int:
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class _LoaderIter:
    """One pass over a DataLoader (`next(iter(loader))` takes its first batch)."""

    __ad_attrs__ = frozenset()

    def __init__(self, loader: DataLoader) -> None:
        self._len = len(loader)
        self._batches = loader._batches()
        _draw_seed(loader.generator)  # PyTorch's worker base seed, drawn on every iter()

    def __iter__(self) -> _LoaderIter:
        return self

    def __next__(self) -> Any:
        return next(self._batches)

    def __len__(self) -> int:
        return self._len


_LoaderIter.__name__ = "_SingleProcessDataLoaderIter"
_LoaderIter.__qualname__ = "_SingleProcessDataLoaderIter"
# printed as PyTorch's classes (`<class 'torch.utils.data.dataloader.DataLoader'>`)
for _cls, _module in (
    (Dataset, "dataset"),
    (TensorDataset, "dataset"),
    (Subset, "dataset"),
    (DataLoader, "dataloader"),
    (_LoaderIter, "dataloader"),
):
    _cls.__module__ = f"torch.utils.data.{_module}"


def module_members() -> dict[str, dict[str, Any]]:
    """The tables of torch.utils and torch.utils.data."""
    data = {
        "Dataset": Dataset,
        "TensorDataset": TensorDataset,
        "Subset": Subset,
        "random_split": random_split,
        "DataLoader": DataLoader,
        "default_collate": default_collate,
        "default_convert": default_convert,
    }
    return {"torch.utils": {"data": "module:torch.utils.data"}, "torch.utils.data": data}
