"""Recurrent layers: RNN, LSTM, GRU and their cells, computed as PyTorch 2.13's CPU code
computes them (aten's RNN.cpp), from adcli's own ops.

Each layer first multiplies the whole sequence by its input weights (one linear), then
runs the cell step by step on the slices; a bidirectional layer runs its forward
direction, then its reverse one, and joins the two outputs along the last dim.

Bit for bit: RNN, GRU, the cells, and LSTM in float64. A float32 LSTM runs, in PyTorch,
on oneDNN's fused LSTM kernel (its outputs' grad_fn is MkldnnRnnLayerBackward0): adcli
gives the same graph, but its values are those of the plain cell arithmetic, which
oneDNN's kernel matches to float32 rounding only (a few units in the last place).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ..autograd import functions as F
from ..autograd import grad_mode, kernels32, ops
from ..autograd.config import config as _config
from ..autograd.node import printed_as_pytorch
from ..autograd.tensor import Tensor
from . import init
from .layers import _empty
from .module import Module, attrs
from .parameter import Parameter

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# ------------------------------------------------------------ gate arithmetic


class _UnsafeSplit(F.Split):
    """gates cut into equal column blocks (unsafe_chunk: pieces that are not views)

    PyTorch's cells take the blocks with unsafe_chunk and then write them in place."""


def _gate_blocks(gates: Tensor, n: int) -> tuple[Tensor, ...]:
    """`gates` (batch, n * hidden) cut into n blocks of columns."""
    size = gates.data_.shape[1] // n
    return _UnsafeSplit.apply(gates, sizes=[size] * n, dim=1)


def _sigmoid_rows(x: np.ndarray) -> np.ndarray:
    """sigmoid of a gate block as PyTorch's in-place sigmoid_ computes it: the block is
    a column range of a wider matrix, so its loop runs row by row, each row a SIMD body
    (SLEEF's exp) and a scalar tail (the C library's exp), which round differently."""
    if x.dtype != np.float32 or x.ndim != 2:
        return kernels32.sigmoid(np.ascontiguousarray(x))
    width = x.shape[1]
    block = kernels32.simd_block()
    body = width - width % block if block else 0
    simd = np.broadcast_to(np.arange(width) < body, x.shape)
    return kernels32.sigmoid(x, simd).astype(np.float32, copy=False)


class _GateSigmoid(F.Sigmoid):
    """sigmoid of a gate block (SigmoidBackward0), rounded row by row as in PyTorch."""

    def forward(ctx, a):
        ctx.save_output()
        return _sigmoid_rows(ops.float_data(a))


def _gate_sigmoid(a: Tensor) -> Tensor:
    return _GateSigmoid.apply(a)


def _rnn_step(act: Any, xw: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """h' = act(h W_hh^T + b_hh + xw): xw is the input's part, already multiplied."""
    return act(ops.add(ops.linear(h, w_hh, b_hh), xw))


def _lstm_step(
    xw: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None
) -> tuple[Tensor, Tensor, tuple[Tensor, ...]]:
    """(h', c', (i, f, g, o)) from the input part xw and the state (h, c)."""
    return _lstm_gates(ops.add(ops.linear(h, w_hh, b_hh), xw), c)


def _lstm_gates(gates: Tensor, c: Tensor) -> tuple[Tensor, Tensor, tuple[Tensor, ...]]:
    """(h', c', (i, f, g, o)) from the summed gate inputs (batch, 4 * hidden)."""
    gi, gf, gg, go = _gate_blocks(gates, 4)
    i, f = _gate_sigmoid(gi), _gate_sigmoid(gf)
    g, o = ops.tanh(gg), _gate_sigmoid(go)
    c2 = ops.add(ops.mul(f, c), ops.mul(i, g))
    return ops.mul(o, ops.tanh(c2)), c2, (i, f, g, o)


def _gru_step(xw: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """r, z from both parts; n = tanh(x_n + r * (W_hn h + b_hn)); h' = (h - n) z + n."""
    xr, xz, xn = _gate_blocks(xw, 3)
    hr, hz, hn = _gate_blocks(ops.linear(h, w_hh, b_hh), 3)
    r = _gate_sigmoid(ops.add(hr, xr))
    z = _gate_sigmoid(ops.add(hz, xz))
    n = ops.tanh(ops.add(xn, ops.mul(hn, r)))
    return ops.add(ops.mul(ops.sub(h, n), z), n)


def _cell_step(mode: str, xw: Tensor, state: Any, w_hh: Tensor, b_hh: Tensor | None) -> Any:
    """One time step of `mode` from the input part xw: the new state."""
    if mode == "LSTM":
        h, c, _ = _lstm_step(xw, state[0], state[1], w_hh, b_hh)
        return (h, c)
    if mode == "GRU":
        return _gru_step(xw, state, w_hh, b_hh)
    return _rnn_step(ops.tanh if mode == "RNN_TANH" else ops.relu, xw, state, w_hh, b_hh)


# ------------------------------------------------------------ layers


def _run_direction(
    mode: str, x: Tensor, state: Any, weights: list[Tensor | None], reverse: bool
) -> tuple[Tensor, Any]:
    """One direction of one layer over x (time, batch, features): (outputs, state)."""
    w_ih, w_hh, b_ih, b_hh = weights
    steps = list(ops.unbind(ops.linear(x, w_ih, b_ih), 0))
    if not steps:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    outs = []
    for xw in reversed(steps) if reverse else steps:
        state = _cell_step(mode, xw, state, w_hh, b_hh)
        outs.append(state[0] if mode == "LSTM" else state)
    if reverse:
        outs.reverse()
    return ops.stack(outs, 0), state


def _run_stack(
    mode: str,
    x: Tensor,
    states: list[Any],
    weights: list[list[Tensor | None]],
    layers: int,
    dropout: float,
    training: bool,
) -> tuple[Tensor, list[Any]]:
    """All layers, states and weights listed layer by layer, direction by direction:
    (the last layer's output, the final states in that order)."""
    dirs = len(states) // layers
    finals: list[Any] = []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            out, state = _run_direction(mode, x, states[k], weights[k], d == 1)
            outs.append(out)
            finals.append(state)
        x = outs[0] if dirs == 1 else ops.cat(outs, outs[0].data_.ndim - 1)
        if dropout != 0 and training and layer < layers - 1:
            x = ops.dropout(x, dropout, True)
    return x, finals


class _MkldnnLstmLayer(F.Function):
    """one direction of one float32 LSTM layer, as one node (PyTorch's oneDNN kernel)

    As PyTorch's oneDNN path records it: inputs (x, w_ih, w_hh, b_ih, b_hh, h0, c0),
    outputs (out, h_n, c_n). Its values are the cell arithmetic's (oneDNN's fused
    kernel rounds a little differently); its backward is the textbook one through
    time, in float32 (not itself differentiable, as PyTorch's is not)."""

    multi_output = True

    def forward(ctx, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse):
        with grad_mode.no_grad():
            args = [Tensor._make(t.data_) for t in (x, w_ih, w_hh, b_ih, b_hh, h0, c0)]
            steps = list(ops.unbind(ops.linear(args[0], args[1], args[3]), 0))
            h, c = args[5], args[6]
            hs, cs, gates = [h.data_], [c.data_], []
            for xw in reversed(steps) if reverse else steps:
                h, c, g = _lstm_step(xw, h, c, args[2], args[4])
                hs.append(h.data_)
                cs.append(c.data_)
                gates.append([t.data_ for t in g])
        out = np.stack(hs[1:][::-1] if reverse else hs[1:])
        ctx.reverse = reverse
        ctx.trace = (hs, cs, gates)
        ctx.save(x, w_ih, w_hh)
        return out, hs[-1].copy(), cs[-1].copy()

    def backward(ctx, g_out, g_h, g_c):
        x, w_ih, w_hh = (t.data_ for t in ctx.saved_tensors)
        hs, cs, gates = ctx.trace
        steps = len(gates)
        dt = x.dtype
        dh = np.zeros_like(hs[0]) if g_h is None else g_h.data_.copy()
        dc = np.zeros_like(cs[0]) if g_c is None else g_c.data_.copy()
        d_gates = np.zeros((steps,) + hs[0].shape[:1] + (4 * hs[0].shape[1],), dt)
        for k in range(steps - 1, -1, -1):
            t = steps - 1 - k if ctx.reverse else k
            if g_out is not None:
                dh = dh + g_out.data_[t]
            i, f, g, o = gates[k]
            tc = np.tanh(cs[k + 1])
            dc = dc + dh * o * (1 - tc * tc)
            blocks = (dc * g * i * (1 - i), dc * cs[k] * f * (1 - f))
            blocks += (dc * i * (1 - g * g), dh * tc * o * (1 - o))
            d_gates[t] = np.concatenate(blocks, axis=1)
            dh = d_gates[t] @ w_hh
            dc = dc * f
        # the hidden states each step read, in time order
        prev = np.stack(hs[:-1][::-1] if ctx.reverse else hs[:-1])
        flat = d_gates.reshape(-1, d_gates.shape[-1])
        grads = (
            d_gates @ w_ih,
            flat.T @ x.reshape(-1, x.shape[-1]),
            flat.T @ prev.reshape(-1, prev.shape[-1]),
            flat.sum(0),
            flat.sum(0).copy(),
            dh,
            dc,
        )
        return tuple(Tensor._make(np.asarray(a, dt)) for a in grads)


# Named after the class statements: nodes of the recurrent layers, not operations of
# the op table, so they stay out of Function.registry (which tests/test_ops.py covers
# case by case), yet print as PyTorch's nodes do.
_UnsafeSplit.grad_fn_name = "UnsafeSplitBackward0"
_MkldnnLstmLayer.grad_fn_name = "MkldnnRnnLayerBackward0"
for _node_class in (_UnsafeSplit, _MkldnnLstmLayer):
    printed_as_pytorch(_node_class)


def _run_mkldnn_lstm(
    x: Tensor,
    hx: Tensor,
    cx: Tensor,
    weights: list[list[Tensor | None]],
    layers: int,
    dropout: float,
    training: bool,
) -> tuple[Tensor, Tensor, Tensor]:
    """A float32 LSTM as PyTorch's oneDNN path builds it: one node per layer and
    direction, the directions' outputs joined, h_n and c_n stacked."""
    dirs = len(weights) // layers
    hy, cy = [], []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            w_ih, w_hh, b_ih, b_hh = weights[k]
            if b_ih is None or b_hh is None:  # oneDNN is given zero biases
                b_ih = Tensor._make(np.zeros(w_ih.data_.shape[:1], w_ih.data_.dtype))
                b_hh = Tensor._make(np.zeros(w_hh.data_.shape[:1], w_hh.data_.dtype))
            h0, c0 = ops.select(hx, 0, k), ops.select(cx, 0, k)
            out, h, c = _MkldnnLstmLayer.apply(x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse=d == 1)
            outs.append(out)
            hy.append(h)
            cy.append(c)
        x = outs[0] if dirs == 1 else ops.cat(outs, -1)
        if dropout != 0 and training and layer < layers - 1:
            x = ops.dropout(x, dropout, True)
    return x, ops.stack(hy, 0), ops.stack(cy, 0)


# ------------------------------------------------------------ modules


def _dim(x: Any) -> int:
    """x.dim(), with Python's error for a value that is no tensor."""
    if not isinstance(x, Tensor):
        raise AttributeError(f"'{type(x).__name__}' object has no attribute 'dim'")
    return x.data_.ndim


def _check_type(name: str, value: Any, kind: type) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")


def _reset_uniform(module: Any) -> None:
    """PyTorch's initialisation of a recurrent layer or cell: every parameter, in
    order, from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
    bound = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


class RNNBase(Module):
    """What RNN, LSTM and GRU share: their weights, initialisation, checks and repr."""

    __ad_attrs__ = attrs(
        *(
            "mode input_size hidden_size num_layers bias batch_first dropout bidirectional "
            "proj_size reset_parameters flatten_parameters all_weights"
        ).split()
    )

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        _check_arguments(self, dropout)
        self._flat_weights_names: list[str] = []
        gates = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        for layer in range(num_layers):
            for d in range(dirs):
                n_in = input_size if layer == 0 else hidden_size * dirs
                suffix = f"l{layer}" + ("_reverse" if d else "")
                shapes = [("weight_ih", (gates, n_in)), ("weight_hh", (gates, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                for stem, shape in shapes:
                    name = f"{stem}_{suffix}"
                    setattr(self, name, Parameter(_empty(*shape, dtype=dtype)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) for every parameter, in order."""
        _reset_uniform(self)

    def flatten_parameters(self) -> None:
        """Nothing to do on the CPU (PyTorch packs weights for cuDNN only)."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters, one list per layer and direction."""
        per = 4 if self.bias else 2
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[i : i + per]] for i in range(0, len(names), per)]

    def _layer_weights(self) -> list[list[Tensor | None]]:
        """[w_ih, w_hh, b_ih, b_hh] per layer and direction (None biases without bias)."""
        return [ws + [None, None] if len(ws) == 2 else ws for ws in self.all_weights]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- checks and shapes ----------------------------------------------------
    def _batched(self, input: Any, hx: Any, label: str) -> tuple[Tensor, bool]:
        """The input with a batch dim (is it batched?), after PyTorch's rank check."""
        nd = _dim(input)
        if nd not in (2, 3):
            raise ValueError(f"{label}: Expected input to be 2D or 3D, got {nd}D {self._rank_word}")
        if nd == 3:
            return input, True
        return ops.unsqueeze(input, 0 if self.batch_first else 1), False

    def _zeros_state(self, x: Tensor, size: int) -> Tensor:
        batch = x.data_.shape[0 if self.batch_first else 1]
        dirs = 2 if self.bidirectional else 1
        return Tensor._make(np.zeros((self.num_layers * dirs, batch, size), x.data_.dtype))

    def _check_input(self, x: Tensor) -> None:
        w = getattr(self, self._flat_weights_names[0])
        if x.data_.dtype != w.data_.dtype:
            raise ValueError(
                f"RNN input dtype ({x.dtype}) does not match weight dtype ({w.dtype}). "
                f"Convert input: input.to({w.dtype}), or convert model: model.to({x.dtype})"
            )
        if self.input_size != x.data_.shape[-1]:
            raise RuntimeError(
                "input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {x.data_.shape[-1]}"
            )

    def _check_hidden(self, x: Tensor, h: Tensor, msg: str = "Expected hidden size") -> None:
        batch = x.data_.shape[0 if self.batch_first else 1]
        dirs = 2 if self.bidirectional else 1
        expected = (self.num_layers * dirs, batch, self.hidden_size)
        if tuple(h.data_.shape) != expected:
            raise RuntimeError(f"{msg} {expected}, got {list(h.data_.shape)}")

    def _time_major(self, x: Tensor) -> Tensor:
        return ops.transpose(x, 0, 1) if self.batch_first else x


def _check_arguments(m: RNNBase, dropout: Any) -> None:
    """PyTorch's checks of the constructor's arguments, in its order."""
    if (
        not isinstance(dropout, numbers.Number)
        or isinstance(dropout, bool)
        or not 0 <= dropout <= 1  # type: ignore[operator]
    ):
        raise ValueError(
            "dropout should be a number in range [0, 1] representing the probability of "
            "an element being zeroed"
        )
    if dropout > 0 and m.num_layers == 1:  # type: ignore[operator]
        _config.warn(
            "dropout option adds dropout after all but last recurrent layer, so non-zero "
            "dropout expects num_layers greater than 1, but got "
            f"dropout={dropout} and num_layers={m.num_layers}"
        )
    _check_type("bias", m.bias, bool)
    _check_type("batch_first", m.batch_first, bool)
    _check_type("input_size", m.input_size, int)
    if m.input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    _check_type("hidden_size", m.hidden_size, int)
    if m.hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if m.num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if m.proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if m.proj_size >= m.hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")
    if m.proj_size:
        raise NotImplementedError("adcli's LSTM has no projections (proj_size) yet")


class _OneStateRNN(RNNBase):
    """RNN and GRU: one hidden state per layer and direction."""

    _label = "RNN"
    _rank_word = "tensor instead"  # (RNN's message says "tensor", GRU's does not)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        x, batched = self._batched(input, hx, self._label)
        if hx is not None:
            want = 3 if batched else 2
            if hx.data_.ndim != want:
                shape = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(
                    f"For {shape} input, hx should also be {want}-D but got "
                    f"{hx.data_.ndim}-D tensor"
                )
            if not batched:
                hx = ops.unsqueeze(hx, 1)
        if hx is None:
            hx = self._zeros_state(x, self.hidden_size)
        self._check_input(x)
        self._check_hidden(x, hx)
        out, finals = _run_stack(
            self.mode,
            self._time_major(x),
            list(ops.unbind(hx, 0)),
            self._layer_weights(),
            self.num_layers,
            self.dropout,
            self.training,
        )
        h_n = ops.stack(finals, 0)
        if self.batch_first:
            out.transpose_(0, 1)  # PyTorch turns it back in place (TransposeBackward1)
        if not batched:
            return ops.squeeze(out, 0 if self.batch_first else 1), ops.squeeze(h_n, 1)
        return out, h_n


class RNN(_OneStateRNN):
    """Elman RNN: h_t = tanh (or relu) of x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh."""

    __ad_attrs__ = RNNBase.__ad_attrs__ | {"nonlinearity"}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            nonlinearity, args = args[3], args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)


class GRU(_OneStateRNN):
    """Gated recurrent unit: reset r, update z and new n gates (in that order)."""

    _label = "GRU"
    _rank_word = "instead"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory: input, forget, cell and output gates (in that order)."""

    _rank_word = "instead"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(
        self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        x, batched = self._batched(input, hx, "LSTM")
        if hx is None:
            h0 = self._zeros_state(x, self.hidden_size)
            hx = (h0, self._zeros_state(x, self.hidden_size))
        else:
            hx = self._given_state(hx, batched)
        self._check_input(x)
        self._check_hidden(x, hx[0], "Expected hidden[0] size")
        self._check_hidden(x, hx[1], "Expected hidden[1] size")
        if x.data_.dtype == np.float32 and x.data_.size:  # PyTorch's oneDNN path
            out, h_n, c_n = _run_mkldnn_lstm(
                self._time_major(x),
                hx[0],
                hx[1],
                self._layer_weights(),
                self.num_layers,
                self.dropout,
                self.training,
            )
        else:
            out, h_n, c_n = self._native(x, hx)
        if self.batch_first:
            out = ops.transpose(out, 0, 1)
        if not batched:
            out = ops.squeeze(out, 0 if self.batch_first else 1)
            return out, (ops.squeeze(h_n, 1), ops.squeeze(c_n, 1))
        return out, (h_n, c_n)

    def _given_state(self, hx: Any, batched: bool) -> tuple[Tensor, Tensor]:
        """(h_0, c_0) as given, checked, with a batch dim."""
        h, c = hx
        want = 3 if batched else 2
        if h.data_.ndim != want or c.data_.ndim != want:
            shape = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(
                f"For {shape} input, hx and cx should also be {want}-D but got "
                f"({h.data_.ndim}-D, {c.data_.ndim}-D) tensors"
            )
        if not batched:
            return ops.unsqueeze(h, 1), ops.unsqueeze(c, 1)
        return h, c

    def _native(self, x: Tensor, hx: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """PyTorch's own LSTM code (float64): cells step by step, states stacked."""
        hs, cs = ops.unbind(hx[0], 0), ops.unbind(hx[1], 0)
        out, finals = _run_stack(
            "LSTM",
            self._time_major(x),
            list(zip(hs, cs, strict=True)),
            self._layer_weights(),
            self.num_layers,
            self.dropout,
            self.training,
        )
        return out, ops.stack([s[0] for s in finals], 0), ops.stack([s[1] for s in finals], 0)


# ------------------------------------------------------------ cells


class RNNCellBase(Module):
    """What the cells share: weight_ih, weight_hh (and biases), initialisation, repr."""

    __ad_attrs__ = attrs(
        *(
            "input_size hidden_size bias weight_ih weight_hh bias_ih bias_hh reset_parameters"
        ).split()
    )
    __ad_settable__ = Module.__ad_settable__ | {"weight_ih", "weight_hh", "bias_ih", "bias_hh"}
    _label = "RNNCell"
    _chunks = 1

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        rows = self._chunks * hidden_size
        self.weight_ih = Parameter(_empty(rows, input_size, dtype=dtype))
        self.weight_hh = Parameter(_empty(rows, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_empty(rows, dtype=dtype))
            self.bias_hh = Parameter(_empty(rows, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) for every parameter, in order."""
        _reset_uniform(self)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _batched(self, input: Any) -> tuple[Tensor, bool]:
        """The input with a batch dim (is it batched?), after PyTorch's rank check."""
        nd = _dim(input)
        if nd not in (1, 2):
            raise ValueError(f"{self._label}: Expected input to be 1D or 2D, got {nd}D instead")
        return (input, True) if nd == 2 else (ops.unsqueeze(input, 0), False)

    def _state(self, x: Tensor, hx: Tensor | None, batched: bool) -> Tensor:
        if hx is None:
            shape = (x.data_.shape[0], self.hidden_size)
            return Tensor._make(np.zeros(shape, x.data_.dtype))
        return hx if batched else ops.unsqueeze(hx, 0)

    def _check(self, x: Tensor, states: tuple[Tensor, ...]) -> None:
        """aten's checks of a cell's input and hidden sizes."""
        if x.data_.shape[1] != self.weight_ih.data_.shape[1]:
            raise RuntimeError(
                f"input has inconsistent input_size: got {x.data_.shape[1]} expected "
                f"{self.weight_ih.data_.shape[1]}"
            )
        for k, h in enumerate(states):
            if x.data_.shape[0] != h.data_.shape[0]:
                raise RuntimeError(
                    f"Input batch size {x.data_.shape[0]} doesn't match hidden{k} batch "
                    f"size {h.data_.shape[0]}"
                )
            if h.data_.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden{k} has inconsistent hidden_size: got {h.data_.shape[1]}, "
                    f"expected {self.hidden_size}"
                )

    def _check_hidden_rank(self, hx: Any, what: str = "hidden") -> None:
        if hx is not None and hx.data_.ndim not in (1, 2):
            raise ValueError(
                f"{self._label}: Expected {what} to be 1D or 2D, got {hx.data_.ndim}D instead"
            )


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh (or relu) of x W_ih^T + b_ih + h W_hh^T + b_hh."""

    __ad_attrs__ = RNNCellBase.__ad_attrs__ | {"nonlinearity"}

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, batched = self._batched(input)
        self._check_hidden_rank(hx)
        h = self._state(x, hx, batched)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        self._check(x, (h,))
        hh = ops.linear(h, self.weight_hh, self.bias_hh)  # PyTorch's order: hh, then ih
        pre = ops.add(hh, ops.linear(x, self.weight_ih, self.bias_ih))
        out = ops.tanh(pre) if self.nonlinearity == "tanh" else ops.relu(pre)
        return out if batched else ops.squeeze(out, 0)


class LSTMCell(RNNCellBase):
    """One LSTM step: gates i, f, g, o; c' = f c + i g; h' = o tanh(c')."""

    _label = "LSTMCell"
    _chunks = 4

    def forward(
        self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        x, batched = self._batched(input)
        if hx is not None:
            for k, v in enumerate(hx):
                self._check_hidden_rank(v, f"hx[{k}]")
        if hx is None:
            h = c = self._state(x, None, batched)
        else:
            h, c = self._state(x, hx[0], batched), self._state(x, hx[1], batched)
        self._check(x, (h, c))
        hh = ops.linear(h, self.weight_hh, self.bias_hh)  # PyTorch's order: hh, then ih
        gates = ops.add(hh, ops.linear(x, self.weight_ih, self.bias_ih))
        h2, c2, _ = _lstm_gates(gates, c)
        if not batched:
            return ops.squeeze(h2, 0), ops.squeeze(c2, 0)
        return h2, c2


class GRUCell(RNNCellBase):
    """One GRU step: r, z, n gates; h' = (h - n) z + n."""

    _label = "GRUCell"
    _chunks = 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, batched = self._batched(input)
        self._check_hidden_rank(hx)
        h = self._state(x, hx, batched)
        self._check(x, (h,))
        xw = ops.linear(x, self.weight_ih, self.bias_ih)  # PyTorch's order: ih, then hh
        out = _gru_step(xw, h, self.weight_hh, self.bias_hh)
        return out if batched else ops.squeeze(out, 0)


MODULES = (RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell)
