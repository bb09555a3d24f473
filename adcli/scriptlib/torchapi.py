"""The names a script sees: `torch`, `torch.nn.functional`, `torch.autograd`, `torch.optim`
and friends, as tables of name -> value built from the autograd package."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from adcli import nn as _nn
from adcli.autograd import (
    custom,
    dtypes,
    einsum,
    engine,
    forward_ad,
    func,
    functional,
    grad_mode,
    graph,
    lr_scheduler,
    ops,
    optim,
    profiler,
    signatures,
    statsops,
)
from adcli.autograd import functions as F
from adcli.autograd import generator as _generator
from adcli.autograd import gradcheck as _gradcheck
from adcli.autograd import random as rng
from adcli.autograd import sampling as _sampling

# anomaly detection lives in adcli/autograd/anomaly.py (the engine checks each node while it is on)
from adcli.autograd.anomaly import detect_anomaly as _DetectAnomaly
from adcli.autograd.anomaly import is_anomaly_enabled
from adcli.autograd.anomaly import set_detect_anomaly as _Anomaly
from adcli.autograd.tensor import Size, Tensor
from adcli.lang import guard
from adcli.scriptlib import data as _data

# Every op exposed as `torch.NAME`.
TORCH_OPS = (
    "tensor as_tensor zeros ones empty full eye arange linspace zeros_like ones_like full_like "
    "empty_like "
    "add sub mul div true_divide pow neg negative exp log log1p sqrt abs sin cos tan tanh "
    "sigmoid relu clamp clip sign sgn floor ceil round square reciprocal where maximum minimum "
    "sum mean prod max min amax amin argmax argmin norm dot mv mm matmul outer ger transpose "
    "swapaxes t permute movedim moveaxis reshape flatten ravel squeeze unsqueeze expand_as cat "
    "concat concatenate stack split chunk unbind narrow select diagonal as_strided gather "
    "masked_fill softmax "
    "log_softmax logsumexp var std cumsum flip eq ne gt ge lt le "
    "equal allclose isnan isinf isfinite all any clone floor_divide remainder logical_not "
    "bmm addmm dropout bilinear prelu "
    "scatter scatter_add index_fill index_add index_copy index_put logcumsumexp fmod "
    "clamp_min clamp_max index_select asin acos atan arcsin arccos arctan rsqrt "
    "topk sort argsort"
).split()

FUNCTIONAL_OPS = (
    "relu leaky_relu softplus sigmoid tanh softmax log_softmax mse_loss l1_loss "
    "binary_cross_entropy cross_entropy nll_loss linear dropout prelu"
).split()


def _shape(size: tuple[Any, ...]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    return ops._factory_shape(size)


def _float_dtype(
    dtype: Any, kernel: str = "normal_kernel_cpu", shape: tuple[int, ...] | None = None
) -> dtypes.DType:
    """The dtype of a random factory, or PyTorch's error from the kernel it would use
    (an empty `shape` runs no kernel: then any dtype passes)."""
    dt = ops._dtype_arg(dtype) or dtypes.DEFAULT_FLOAT
    if not dt.is_floating_point and (shape is None or math.prod(shape) > 0):
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{dt.legacy.replace('Tensor', '')}'"
        )
    return dt


_FACTORY_TAIL = (
    "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
    "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n"
)
_LIKE_TAIL = "torch.memory_format memory_format = None, " + _FACTORY_TAIL.replace(
    "Tensor out = None, ", ""
)
#: PyTorch's overloads of each random factory, as its "invalid combination" error lists them
_GENERATOR_OVERLOADS = {
    "randn": ("tuple of ints size",),
    "rand": ("tuple of ints size",),
    "randint": ("int high, tuple of ints size", "int low, int high, tuple of ints size"),
    "randperm": ("int n",),
    "randn_like": ("Tensor input",),
    "rand_like": ("Tensor input",),
}


def _generator_of(name: str, generator: Any, args: tuple[Any, ...], **given: Any) -> Any:
    """`generator`, or the default one; a `generator=` that is no torch.Generator gets
    PyTorch's "invalid combination of arguments" TypeError (keywords other than
    `generator` are listed when they differ from their defaults)."""
    if generator is None:
        return rng.default_generator
    if isinstance(generator, rng.Generator):
        return generator
    got = [ops._type_name(a) if not isinstance(a, Tensor) else "Tensor" for a in args]
    for key, value in given.items():
        if value is not None and value is not False:
            got.append(f"{key}={_arg_type(value)}")
    got.append(f"generator={_arg_type(generator)}")
    tail = _LIKE_TAIL if name.endswith("_like") else _FACTORY_TAIL
    lines = []
    for head in _GENERATOR_OVERLOADS[name]:
        lines.append(f" * ({head}, *, torch.Generator generator, {tail}")
        lines.append(f" * ({head}, *, {tail}")
    raise TypeError(
        f"{name}() received an invalid combination of arguments - got ({', '.join(got)}), "
        "but expected one of:\n" + "".join(lines)
    )


def _arg_type(value: Any) -> str:
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, dtypes.DType):
        return "torch.dtype"
    return ops._type_name(value)


def randn(
    *size: Any,
    dtype: Any = None,
    requires_grad: bool = False,
    generator: Any = None,
    device: Any = None,
) -> Tensor:
    """Standard normal samples, the same numbers as torch after manual_seed."""
    shape = _shape(size)
    dt = _float_dtype(dtype, shape=shape)
    gen = _generator_of("randn", generator, size, dtype=dtype, requires_grad=requires_grad)
    if not dt.is_floating_point:  # empty: no kernel ran
        return ops._finish(np.zeros(shape, dt.np), requires_grad)
    return ops._finish(gen.randn(shape, dt.name), requires_grad)


def rand(
    *size: Any,
    dtype: Any = None,
    requires_grad: bool = False,
    generator: Any = None,
    device: Any = None,
) -> Tensor:
    """Uniform samples in [0, 1), the same numbers as torch after manual_seed."""
    # (PyTorch checks uniform's dtype even for an empty result, unlike normal's)
    gen = _generator_of("rand", generator, size, dtype=dtype, requires_grad=requires_grad)
    dt = _float_dtype(dtype, "check_uniform_bounds")
    return ops._finish(gen.rand(_shape(size), dt.name), requires_grad)


def randint(
    low: int,
    high: Any = None,
    size: Any = None,
    dtype: Any = None,
    generator: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Random integers in [low, high)."""
    given = (low, high, size) if size is not None else (low, high)
    if size is None:
        low, high, size = 0, low, high
    if size is None:
        raise TypeError("randint() missing 1 required positional argument: 'size'")
    gen = _generator_of("randint", generator, given, dtype=dtype, requires_grad=requires_grad)
    data = gen.randint(int(low), int(high), _shape(tuple(size)))
    dt = ops._dtype_arg(dtype)
    if dt is not None:
        data = data.astype(dt.np)
    return ops._finish(data, requires_grad)


def randperm(n: int, dtype: Any = None, generator: Any = None) -> Tensor:
    """A random permutation of 0..n-1."""
    gen = _generator_of("randperm", generator, (n,), dtype=dtype)
    return ops._finish(gen.randperm(int(n)), False)


_NORMAL_SIGNATURES = (
    "but expected one of:\n"
    " * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (float mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (float mean, float std, tuple of ints size, *, torch.Generator generator = None, "
    "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
    "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n"
)


def normal(
    mean: Any,
    std: Any = 1.0,
    size: Any = None,
    *,
    generator: Any = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    """Samples of N(mean, std**2), PyTorch's numbers after manual_seed: with number
    arguments `empty(size).normal_(mean, std)`, with tensors `randn * std + mean`."""
    gen = generator or rng.default_generator
    if generator is not None and not isinstance(generator, rng.Generator):
        args = (mean, std) if size is None else (mean, std, size)
        got = ", ".join(_arg_type(a) for a in args) + f", generator={_arg_type(generator)}"
        raise TypeError(
            f"normal() received an invalid combination of arguments - got ({got}), "
            + _NORMAL_SIGNATURES
        )
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            got = ", ".join(type(a).__name__ for a in (mean, std))
            raise TypeError(
                f"normal() received an invalid combination of arguments - got ({got}), "
                + _NORMAL_SIGNATURES
            )
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {float(std):g}")
        dt = _float_dtype(dtype)
        values = gen.normal(_shape((size,)), float(mean), float(std), dt.name)
        return ops._finish(values, requires_grad)
    tensors = [a for a in (mean, std) if isinstance(a, Tensor)]
    for t in tensors:
        if t.data_.dtype.kind != "f":
            _float_dtype(t.dtype)  # PyTorch's "not implemented for 'Long'"
    if isinstance(std, Tensor) and bool(np.any(std.data_ < 0)):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    dt = dtypes.result_type(*tensors)
    shape = np.broadcast_shapes(*(t.data_.shape for t in tensors))
    noise = gen.randn(tuple(shape), dt.name)
    sd = std.data_ if isinstance(std, Tensor) else np.asarray(std, dt.np)
    mu = mean.data_ if isinstance(mean, Tensor) else np.asarray(mean, dt.np)
    # two roundings, as PyTorch's out.mul_(std).add_(mean)
    sample = (noise * sd.astype(dt.np)).astype(dt.np) + mu.astype(dt.np)
    # the sample's gradient (and tangent) to mean and std is zero, as PyTorch defines it
    row = {(True, False): F.Normal, (False, True): F.NormalStd, (True, True): F.NormalBoth}
    kind = row[(isinstance(mean, Tensor), isinstance(std, Tensor))]
    return kind.apply(*tensors, sample=sample)


def randn_like(
    t: Tensor, dtype: Any = None, requires_grad: bool = False, *, generator: Any = None
) -> Tensor:
    """randn with t's shape (and layout: a transposed t's elements are drawn in memory
    order, one by one, as PyTorch's empty_like(t).normal_())."""
    _generator_of("randn_like", generator, (t,), dtype=dtype, requires_grad=requires_grad)
    dt = dtype or t.dtype
    x = t.data_
    if ops._is_contiguous(x) or not x.size:
        return randn(*x.shape, dtype=dt, requires_grad=requires_grad, generator=generator)
    buf = _empty_like_layout(x, _float_dtype(dt, shape=x.shape))
    ops.EXTRA_METHODS["normal_"](buf, generator=generator)
    return ops._finish(buf.data_, requires_grad)


def rand_like(
    t: Tensor, dtype: Any = None, requires_grad: bool = False, *, generator: Any = None
) -> Tensor:
    """rand with t's shape (and layout: a transposed t's elements are drawn in memory
    order, as PyTorch's empty_like(t).uniform_())."""
    _generator_of("rand_like", generator, (t,), dtype=dtype, requires_grad=requires_grad)
    dt = dtype or t.dtype
    x = t.data_
    if ops._is_contiguous(x) or not x.size:
        return rand(*x.shape, dtype=dt, requires_grad=requires_grad, generator=generator)
    buf = _empty_like_layout(x, _float_dtype(dt, "check_uniform_bounds"))
    ops.EXTRA_METHODS["uniform_"](buf, generator=generator)
    return ops._finish(buf.data_, requires_grad)


def _empty_like_layout(x: np.ndarray, dt: Any) -> Tensor:
    """An uninitialised tensor of x's shape and of the strides PyTorch's empty_like
    gives it (x's dims in the order of its strides)."""
    return Tensor._make(ops.in_memory_order(np.zeros(x.size, dt.np), x))


def manual_seed(seed: int) -> Any:
    """Seed the global generator (as torch.manual_seed)."""
    return rng.default_generator.manual_seed(int(seed))


def initial_seed() -> int:
    """The seed of the global generator."""
    return rng.default_generator.initial_seed()


def seed() -> int:
    """Seed the global generator non-deterministically; return the seed (torch.seed)."""
    return _generator.Generator.seed(rng.default_generator)  # type: ignore[arg-type]


def get_rng_state() -> Tensor:
    """The global generator's state: PyTorch's 5056 bytes, as a torch.uint8 tensor."""
    return _generator.Generator.get_state(rng.default_generator)  # type: ignore[arg-type]


def set_rng_state(new_state: Any) -> None:
    """Restore the global generator's state from `get_rng_state()`."""
    _generator.Generator.set_state(rng.default_generator, new_state)  # type: ignore[arg-type]


def autograd_backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: Any = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """torch.autograd.backward"""
    engine.backward(tensors, grad_tensors, retain_graph, create_graph, inputs)


def _dtype_names() -> dict[str, Any]:
    return {
        "float32": dtypes.float32,
        "float": dtypes.float32,
        "float64": dtypes.float64,
        "double": dtypes.float64,
        "float16": dtypes.float16,
        "half": dtypes.float16,
        "int64": dtypes.int64,
        "long": dtypes.int64,
        "int32": dtypes.int32,
        "int": dtypes.int32,
        "int16": dtypes.int16,
        "int8": dtypes.int8,
        "uint8": dtypes.uint8,
        "bool": dtypes.bool_,
    }


def module_table() -> dict[str, dict[str, Any]]:
    """Each importable module's members, by dotted name. A member that is itself a
    module is given as the string "module:<dotted name>" for the host to resolve.

    The tables are fresh dicts on each call, with a fresh random generator for
    `random` and `numpy.random`; everything else is built once per process (about
    7,000 wrappers, most of a run's set-up time otherwise)."""
    from adcli.scriptlib import pymodules

    tables = {name: dict(members) for name, members in _shared_tables().items()}
    for name, members in pymodules.per_run_tables().items():
        tables.setdefault(name, {}).update(members)
    return tables


@functools.cache
def _shared_tables() -> dict[str, dict[str, Any]]:
    """The stateless part of `module_table()`; callers copy before changing it."""
    torch: dict[str, Any] = {name: getattr(ops, name) for name in TORCH_OPS if hasattr(ops, name)}
    torch.update({name: getattr(ops, name) for name in ops.TUTORIAL_FUNCTIONS})
    torch["range"] = ops.range_inclusive  # (deprecated in PyTorch, still in old tutorials)
    torch.update(_dtype_names())
    torch.update(
        randn=randn,
        normal=normal,
        rand=rand,
        randint=randint,
        randperm=randperm,
        randn_like=randn_like,
        rand_like=rand_like,
        manual_seed=manual_seed,
        initial_seed=initial_seed,
        seed=seed,
        get_rng_state=get_rng_state,
        set_rng_state=set_rng_state,
        Generator=_generator.Generator,
        default_generator=rng.default_generator,
        multinomial=_sampling.multinomial,
        einsum=einsum.einsum,
        trace=statsops.trace,
        std_mean=statsops.std_mean,
        var_mean=statsops.var_mean,
        cdist=statsops.cdist,
        no_grad=grad_mode.no_grad,
        enable_grad=grad_mode.enable_grad,
        set_grad_enabled=grad_mode.set_grad_enabled,
        is_grad_enabled=grad_mode.is_grad_enabled,
        inference_mode=grad_mode.inference_mode,
        is_inference_mode_enabled=grad_mode.is_inference_mode_enabled,
        Size=Size,
        pi=math.pi,
        e=math.e,
        inf=math.inf,
        nan=math.nan,
        autograd="module:torch.autograd",
        nn="module:torch.nn",
        optim="module:torch.optim",
        linalg="module:torch.linalg",
        utils="module:torch.utils",
    )
    torch["relu"] = ops.relu
    torch.update(ops.inplace_functions())  # torch.exp_(x) and friends
    functional_: dict[str, Any] = {name: getattr(ops, name) for name in FUNCTIONAL_OPS}
    nn: dict[str, Any] = {"functional": "module:torch.nn.functional"}  # + adcli/nn's tables
    autograd = {
        "grad": engine.grad,
        "backward": autograd_backward,
        "functional": "module:torch.autograd.functional",
        "graph": "module:torch.autograd.graph",
        "set_detect_anomaly": _Anomaly,
        "detect_anomaly": _DetectAnomaly,
        "is_anomaly_enabled": is_anomaly_enabled,
        "gradcheck": _gradcheck.gradcheck,
        "gradgradcheck": _gradcheck.gradgradcheck,
        "Function": custom.Function,
        "function": "module:torch.autograd.function",
        "profiler": "module:torch.autograd.profiler",
    }
    # custom autograd Functions (adcli/autograd/custom.py)
    autograd_function = {
        "Function": custom.Function,
        "FunctionCtx": custom.FunctionCtx,
        "once_differentiable": custom.once_differentiable,
    }
    autograd_functional = {
        "jacobian": functional.jacobian,
        "hessian": functional.hessian,
        "vjp": functional.vjp,
        "jvp": functional.jvp,
        "vhp": functional.vhp,
        "hvp": functional.hvp,
    }
    autograd_graph = {
        "saved_tensors_hooks": graph.saved_tensors_hooks,
        "save_on_cpu": graph.save_on_cpu,
        "Node": graph.Node,
    }
    optim_ = {
        "Optimizer": optim.Optimizer,
        "SGD": optim.SGD,
        "Adam": optim.Adam,
        "AdamW": optim.AdamW,
        "Adamax": optim.Adamax,
        "NAdam": optim.NAdam,
        "RAdam": optim.RAdam,
        "Adadelta": optim.Adadelta,
        "RMSprop": optim.RMSprop,
        "Adagrad": optim.Adagrad,
        "lr_scheduler": "module:torch.optim.lr_scheduler",
    }
    linalg = {"norm": _linalg_norm, "vector_norm": _vector_norm}
    math_ = {
        name: getattr(math, name)
        for name in (
            "pi e inf nan sqrt exp log log2 log10 sin cos tan tanh atan atan2 floor ceil "
            "fabs pow isclose isnan isinf factorial"
        ).split()
    }
    tables = {
        "torch": torch,
        "torch.nn": nn,
        "torch.nn.functional": functional_,
        "torch.autograd": autograd,
        "torch.autograd.functional": autograd_functional,
        "torch.autograd.graph": autograd_graph,
        "torch.autograd.function": autograd_function,
        "torch.optim": optim_,
        "torch.optim.lr_scheduler": lr_scheduler.module_members(),
        "torch.linalg": linalg,
        "math": math_,
    }
    # forward-mode AD (adcli/autograd/forward_ad.py) and torch.func (adcli/autograd/func.py)
    autograd["forward_ad"] = "module:torch.autograd.forward_ad"
    torch["func"] = "module:torch.func"
    tables["torch.autograd.forward_ad"] = forward_ad.module_members()
    tables["torch.func"] = func.module_members()
    # torch.utils.data (adcli/scriptlib/data.py)
    tables.update(_data.module_members())
    # the profiler (adcli/autograd/profiler.py)
    torch["profiler"] = "module:torch.profiler"
    tables["torch.autograd.profiler"] = profiler.autograd_profiler_members()
    tables["torch.profiler"] = profiler.torch_profiler_members()
    tables["torch.profiler.ProfilerActivity"] = dict(profiler.ACTIVITIES)
    # torch.nn's modules, init, utils and parameter, and more functional names (adcli/nn)
    for name, members in _nn.tables().items():
        tables.setdefault(name, {}).update(members)
    guard.ATTRIBUTE_READERS.update(_nn.ATTRIBUTE_READERS)  # how scripts read a layer's attributes
    guard.ATTRIBUTE_WRITERS.update(_nn.ATTRIBUTE_WRITERS)  # and set them
    return _extend(tables)


def _extend(tables: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Merge in the legacy API (adcli/scriptlib/compat.py) and the Python modules scripts may
    import (adcli/scriptlib/pymodules.py: math, random, numpy)."""
    from adcli.nn import functional as nn_functional
    from adcli.scriptlib import compat, pymodules

    for extra in (compat.legacy_tables(), pymodules.module_tables()):
        for name, members in extra.items():
            tables.setdefault(name, {}).update(members)
    signatures.conform_table("torch", tables["torch"])  # PyTorch's keyword names, out=
    # torch.functional: the module behind a few torch names (tutorials import it as F)
    tables["torch"]["functional"] = "module:torch.functional"
    tables["torch.functional"] = {name: tables["torch"][name] for name in ("norm", "split")}
    tables["torch.nn.functional"].update(nn_functional.members())
    compat.wrap_factories(tables["torch"])
    return tables


def _vector_norm(
    x: Tensor,
    ord: Any = 2,
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
    out: Any = None,
) -> Tensor:
    """torch.linalg.vector_norm (`dtype=` casts the input first)."""
    if dtype is not None:
        x = ops.to_dtype(x, dtype)
    result = ops.norm(x, ord, dim, keepdim)
    if out is None:
        return result
    return signatures.write_out("linalg_vector_norm", _same, (result,), {}, out)


def _linalg_norm(
    input: Tensor,
    ord: Any = None,
    dim: Any = None,
    keepdim: bool = False,
    *,
    out: Any = None,
    dtype: Any = None,
) -> Tensor:
    """torch.linalg.norm: the vector norm, or a matrix's Frobenius norm."""
    pair = isinstance(dim, (tuple, list)) and len(dim) == 2
    matrix = pair or (input.data_.ndim == 2 and dim is None)
    if matrix and ord not in (None, "fro"):
        raise NotImplementedError(
            f"adcli has no matrix norm of ord={ord!r}: torch.linalg.norm of a matrix supports "
            "ord=None or 'fro' (for a vector norm of the flattened matrix use "
            "torch.linalg.vector_norm)"
        )
    p = 2 if ord in (None, "fro") else ord
    return _vector_norm(input, p, dim, keepdim, dtype=dtype, out=out)


def _same(t: Tensor) -> Tensor:
    return t
