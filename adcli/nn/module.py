"""`torch.nn.Module`: registration of parameters, buffers and submodules, hooks,
train/eval, state_dict, and PyTorch's printed form.

Scripts subclass `Module` (`class Net(nn.Module)`).  The sandbox reads a script
instance's attributes from its `__dict__`, so every registered parameter, buffer
and submodule is stored there too (PyTorch keeps them only in `_parameters`,
`_buffers` and `_modules`); those three dicts keep the registration order that
`parameters()`, `state_dict()` and `repr` follow.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np

from ..autograd import dtypes, grad_mode
from ..autograd.dtypes import DType
from ..autograd.node import RemovableHandle
from ..autograd.tensor import Tensor
from . import hooks as _hooks
from .parameter import Parameter

# What a script may call or read on any module (a script subclass reads its own
# attributes from __dict__; a host layer lists its attributes in its own table).
MODULE_ATTRS = frozenset(
    (
        "training forward parameters named_parameters buffers named_buffers children "
        "named_children modules named_modules zero_grad train eval requires_grad_ "
        "state_dict load_state_dict register_buffer register_parameter add_module "
        "register_module get_submodule get_parameter apply to cpu cuda double float half "
        "register_forward_hook register_forward_pre_hook register_full_backward_hook "
        "extra_repr"
    ).split()
)


def attrs(*names: str) -> frozenset[str]:
    """A layer's readable names: Module's and its own."""
    return MODULE_ATTRS | frozenset(names)


def typename(v: Any) -> str:
    """torch.typename: `torch.FloatTensor` for a tensor, else the qualified class name."""
    if isinstance(v, Tensor):
        return "torch." + v.dtype.legacy
    t = type(v)
    mod = t.__module__
    if mod in ("builtins", "__builtin__", None):
        return t.__qualname__
    return f"{mod}.{t.__qualname__}"


class OrderedDict(collections.OrderedDict):
    """The state_dict a script gets: an ordered dict it may read like a dict."""

    __ad_attrs__ = frozenset(
        "keys values items get pop update copy setdefault move_to_end popitem".split()
    )


class _IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (
            f"_IncompatibleKeys(missing_keys={self.missing_keys!r}, "
            f"unexpected_keys={self.unexpected_keys!r})"
        )

    __str__ = __repr__


_IncompatibleKeys.__ad_attrs__ = frozenset({"missing_keys", "unexpected_keys"})  # type: ignore[attr-defined]


class _Hook:
    """One registered hook (compared by identity, so a handle removes its own)."""

    __slots__ = ("entry",)

    def __init__(self, entry: Any) -> None:
        self.entry = entry


def _forward_unimplemented(self: Module, *args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError(
        f'Module [{type(self).__name__}] is missing the required "forward" function'
    )


def _indent(text: str, n: int) -> str:
    """Indent every line of `text` but the first by `n` spaces."""
    first, *rest = text.split("\n")
    if not rest:
        return text
    pad = " " * n
    return "\n".join([first] + [pad + line for line in rest])


class Module:
    """Base class of every layer and model."""

    __ad_subclass__ = True
    __ad_attrs__ = MODULE_ATTRS
    __ad_settable__ = frozenset({"training"})
    __ad_kind__ = "nn_module"

    forward: Callable[..., Any] = _forward_unimplemented

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                f"'{next(iter(kwargs))}'"
            )
        if args:
            raise TypeError(
                f"{type(self).__name__}.__init__() takes 1 positional argument but "
                f"{len(args) + 1} were given"
            )
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent"] = set()
        d["_modules"] = {}
        d["_forward_hooks"] = []
        d["_forward_pre_hooks"] = []
        d["_backward_hooks"] = []

    # ------------------------------------------------------------ attributes
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            if name not in params:
                d.pop(name, None)  # a plain attribute of that name is replaced
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{typename(value)}' as parameter '{name}' "
                    "(torch.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{typename(value)}' as child module '{name}' "
                    "(torch.nn.Module or None expected)"
                )
            modules[name] = value
        else:
            buffers = d.get("_buffers")
            if buffers is not None and name in buffers:
                if value is not None and not isinstance(value, Tensor):
                    raise TypeError(
                        f"cannot assign '{typename(value)}' as buffer '{name}' "
                        "(torch.Tensor or None expected)"
                    )
                buffers[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._forget(name)
        object.__delattr__(self, name)

    def _forget(self, name: str, keep: str = "") -> None:
        """Drop `name` from the registries but `keep` (before it is registered there:
        a name re-assigned in its own registry keeps its place in the order)."""
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            reg = d.get(key)
            if reg is not None and key != keep:
                reg.pop(name, None)
        np_ = d.get("_non_persistent")
        if np_ is not None:
            np_.discard(name)

    def _check_init(self, what: str) -> dict[str, Any]:
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")
        return d

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None) under `name`."""
        d = self._check_init("parameter")
        _check_name(name, "parameter")
        if name in d and name not in d["_parameters"]:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{typename(param)}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must "
                f"be created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method."
            )
        d["_parameters"][name] = param
        d[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (in state_dict if persistent)."""
        d = self._check_init("buffer")
        _check_name(name, "buffer")
        if name in d and name not in d["_buffers"]:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                "(torch Tensor or None required)"
            )
        d["_buffers"][name] = tensor
        if persistent:
            d["_non_persistent"].discard(name)
        else:
            d["_non_persistent"].add(name)
        d[name] = tensor

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under `name`."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {typename(name)}")
        d = self.__dict__
        if "_modules" not in d:
            raise AttributeError("cannot assign module before Module.__init__() call")
        if name in d and name not in d["_modules"]:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        d["_modules"][name] = module
        d[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path `target` ("" is the module itself)."""
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            sub = mod.__dict__.get("_modules", {}).get(item)
            if not isinstance(sub, Module):
                if item in mod.__dict__:
                    raise AttributeError("`" + item + "` is not an nn.Module")
                raise AttributeError(type(mod).__name__ + " has no attribute `" + item + "`")
            mod = sub
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path `target`."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod.__dict__:
            raise AttributeError(type(mod).__name__ + " has no attribute `" + name + "`")
        p = mod.__dict__[name]
        if not isinstance(p, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return p

    # ------------------------------------------------------------ traversal
    def named_modules(
        self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """(name, module) for this module and every submodule, depth first."""
        seen = memo if memo is not None else set()
        stack: list[tuple[str, Module]] = [(prefix, self)]
        while stack:
            name, mod = stack.pop()
            if remove_duplicate:
                if id(mod) in seen:
                    continue
                seen.add(id(mod))
            yield name, mod
            children = [
                (name + ("." if name else "") + k, m)
                for k, m in mod.__dict__.get("_modules", {}).items()
                if m is not None
            ]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        """This module and every submodule."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, module) for the direct children."""
        seen: set[int] = set()
        for name, m in self.__dict__.get("_modules", {}).items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        """The direct children."""
        for _, m in self.named_children():
            yield m

    def _named_members(
        self, registry: str, prefix: str, recurse: bool, remove_duplicate: bool
    ) -> Iterator[tuple[str, Any]]:
        mods = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        seen: set[int] = set()
        for mprefix, mod in mods:
            for k, v in mod.__dict__.get(registry, {}).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield mprefix + ("." if mprefix else "") + k, v

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs, in registration order."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter (each once), in registration order."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, buffer) pairs."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ------------------------------------------------------------ modes
    def train(self, mode: bool = True) -> Module:
        """Set training mode here and in every submodule; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():  # a module tree is shallow: plain recursion
            m.train(mode)
        return self

    def eval(self) -> Module:
        """train(False)."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set requires_grad on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's .grad (to None by default, as PyTorch 2)."""
        for p in self.parameters():
            g = p._grad
            if g is None:
                continue
            if set_to_none:
                p._grad = None
            else:
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call fn on every submodule (each child's subtree first), then on self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ dtype / device
    def _convert(self, fn: Callable[[np.ndarray], np.ndarray]) -> Module:
        for m in self.modules():
            d = m.__dict__
            for reg in (d.get("_parameters", {}), d.get("_buffers", {})):
                for t in reg.values():
                    if t is None or t.data_.dtype.kind not in "fc":
                        continue
                    t.data_ = fn(t.data_)
                    if t._grad is not None:
                        t._grad.data_ = fn(t._grad.data_)
        return self

    def _cast(self, dt: DType) -> Module:
        return self._convert(lambda a: a.astype(dt.np, copy=False))

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move to a device (only the CPU exists) and/or cast floating tensors."""
        dt = kwargs.get("dtype")
        device = kwargs.get("device")
        for a in args:
            if isinstance(a, DType):
                dt = a
            elif isinstance(a, Tensor):
                dt = a.dtype
            else:
                device = a
        if self._has_tensors():
            _check_device(device)  # as PyTorch, only moving a tensor fails
        if dt is not None:
            if not dt.is_floating_point:
                raise TypeError(
                    "nn.Module.to only accepts floating point or complex dtypes, but got "
                    f"desired dtype={dt}"
                )
            self._cast(dt)
        return self

    def cpu(self) -> Module:
        """Returns self (everything is on the CPU)."""
        return self

    def cuda(self, device: Any = None) -> Module:
        """PyTorch's CPU-build error (when there is a tensor to move)."""
        if self._has_tensors():
            raise AssertionError("Torch not compiled with CUDA enabled")
        return self

    def _has_tensors(self) -> bool:
        return any(
            t is not None
            for m in self.modules()
            for reg in ("_parameters", "_buffers")
            for t in m.__dict__.get(reg, {}).values()
        )

    def double(self) -> Module:
        """Cast floating parameters and buffers to float64."""
        return self._cast(dtypes.float64)

    def float(self) -> Module:
        """Cast floating parameters and buffers to float32."""
        return self._cast(dtypes.float32)

    def half(self) -> Module:
        """Cast floating parameters and buffers to float16."""
        return self._cast(dtypes.float16)

    # ------------------------------------------------------------ state
    def _state_items(self, prefix: str = "") -> Iterator[tuple[str, Module, str, Tensor]]:
        """(key, owner, local name, tensor) of every state_dict entry, in PyTorch's order
        (own parameters, own persistent buffers, then each child's, depth first)."""
        stack: list[tuple[str, Module]] = [(prefix, self)]
        while stack:
            pre, mod = stack.pop()
            d = mod.__dict__
            for k, p in d.get("_parameters", {}).items():
                if p is not None:
                    yield pre + k, mod, k, p
            skip = d.get("_non_persistent", set())
            for k, b in d.get("_buffers", {}).items():
                if b is not None and k not in skip:
                    yield pre + k, mod, k, b
            kids = [(pre + k + ".", m) for k, m in d.get("_modules", {}).items() if m is not None]
            stack.extend(reversed(kids))

    def state_dict(
        self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (detached unless keep_vars)."""
        out = destination if destination is not None else OrderedDict()
        for key, _, _, t in self._state_items(prefix):
            out[key] = t if keep_vars else t.detach()
        return out

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Copy values from `state_dict` into the parameters and buffers (no_grad)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        with grad_mode.no_grad():
            for key, mod, name, t in self._state_items():
                if key not in state_dict:
                    missing.append(key)
                    continue
                src = state_dict[key]
                if not isinstance(src, Tensor):
                    errors.append(
                        f'While copying the parameter named "{key}", expected torch.Tensor or '
                        f"Tensor-like object from checkpoint but received {type(src)}"
                    )
                    continue
                if src.data_.shape != t.data_.shape:
                    errors.append(
                        f"size mismatch for {key}: copying a param with shape {src.shape} from "
                        f"checkpoint, the shape in current model is {t.shape}."
                    )
                    continue
                if assign:
                    new = src if not isinstance(t, Parameter) else Parameter(src, t.requires_grad)
                    setattr(mod, name, new) if isinstance(new, Parameter) else mod.register_buffer(
                        name, new, name not in mod.__dict__["_non_persistent"]
                    )
                else:
                    t.copy_(src)
        for pre, mod in self.named_modules(remove_duplicate=False):
            dotted = pre + "." if pre else ""
            d = mod.__dict__
            local = set(d.get("_parameters", {})) | set(d.get("_buffers", {}))
            kids = d.get("_modules", {})
            for key in state_dict:
                if key.startswith(dotted):
                    head = key[len(dotted) :].split(".", 1)[0]
                    if head not in kids and head not in local:
                        unexpected.append(key)
        if strict:
            if unexpected:
                errors.insert(
                    0,
                    "Unexpected key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in unexpected)
                    ),
                )
            if missing:
                errors.insert(
                    0,
                    "Missing key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in missing)
                    ),
                )
        if errors:
            raise RuntimeError(
                "Error(s) in loading state_dict for {}:\n\t{}".format(
                    type(self).__name__, "\n\t".join(errors)
                )
            )
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------ hooks
    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call hook(module, args) before forward; a result replaces the args."""
        return self._add_hook("_forward_pre_hooks", (hook, with_kwargs, False), prepend)

    def register_forward_hook(
        self,
        hook: Callable[..., Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """Call hook(module, args, output) after forward; a result replaces the output."""
        return self._add_hook("_forward_hooks", (hook, with_kwargs, always_call), prepend)

    def register_full_backward_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Call hook(module, grad_input, grad_output) when the gradients with respect to
        the module's inputs are computed; a result replaces grad_input."""
        return self._add_hook("_backward_hooks", hook, prepend)

    def _add_hook(self, attr: str, entry: Any, prepend: bool) -> RemovableHandle:
        hooks = self.__dict__.get(attr)
        if hooks is None:
            hooks = self.__dict__[attr] = []
        # a fresh box per registration: the same function registered twice is two entries
        box = _Hook(entry)
        if prepend:
            hooks.insert(0, box)
        else:
            hooks.append(box)
        return RemovableHandle(self, attr, box)

    def __getstate__(self) -> Any:  # pragma: no cover - copy support
        return self.__dict__

    # ------------------------------------------------------------ calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        if not (d.get("_forward_hooks") or d.get("_forward_pre_hooks") or d.get("_backward_hooks")):
            return self.forward(*args, **kwargs)
        return self._call_hooked(args, kwargs)

    def _call_hooked(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        d = self.__dict__
        for box in list(d.get("_forward_pre_hooks") or ()):
            hook, with_kwargs, _ = box.entry
            if with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        backward_hooks = [box.entry for box in d.get("_backward_hooks") or ()]
        call = None
        if backward_hooks:
            call = _hooks._Call(self, backward_hooks, len(args))
            args = _hooks.wrap_inputs(call, args)
        result = self.forward(*args, **kwargs)
        for box in list(d.get("_forward_hooks") or ()):
            hook, with_kwargs, _ = box.entry
            r = hook(self, args, kwargs, result) if with_kwargs else hook(self, args, result)
            if r is not None:
                result = r
        if call is not None:
            result = _hooks.wrap_outputs(call, result)
        return result

    # ------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """The text inside this module's parentheses (layers override it)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def _child_lines(self) -> list[str]:
        return [
            f"({key}): " + _indent(repr(mod), 2)
            for key, mod in self.__dict__.get("_modules", {}).items()
        ]

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = self._child_lines()
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


def _check_name(name: Any, what: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{what} name should be a string. Got {typename(name)}")
    if "." in name:
        raise KeyError(f'{what} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{what} name can\'t be empty string ""')


def _check_device(device: Any) -> None:
    """Only the CPU: a CUDA device gets PyTorch's CPU-build error."""
    if device is None:
        return
    text = str(device) if not isinstance(device, str) else device
    if text.startswith("cuda"):
        raise AssertionError("Torch not compiled with CUDA enabled")
