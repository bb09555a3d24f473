"""`torch.nn` for adcli scripts: Module and Parameter, layers, activations, losses,
`nn.init` and `nn.utils`, on the autograd engine of adcli.autograd.

`tables()` gives the importable modules' members (wired into torchapi.module_table),
and `ATTRIBUTE_READERS` and `ATTRIBUTE_WRITERS` how the sandbox reads and sets a
layer's attributes (put into adcli.lang.guard by the script library: this package is
below the language).
"""

from __future__ import annotations

from typing import Any

from ..autograd import convops, ops, pooling
from . import (
    activation,
    containers,
    conv,
    init,
    layers,
    loss,
    normalization,
    rnn,
    stateless,
    utils,
)
from .module import Module
from .parameter import Parameter

MODULE_CLASSES: tuple[type[Module], ...] = (
    Module,
    containers.Sequential,
    containers.ModuleList,
    containers.ModuleDict,
    containers.ParameterList,
    containers.ParameterDict,
    layers.Identity,
    layers.Linear,
    layers.Bilinear,
    layers.Embedding,
    layers.Flatten,
    layers.Unflatten,
    layers.Dropout,
    layers.Dropout2d,
    conv.Conv1d,
    conv.Conv2d,
    conv.MaxPool2d,
    conv.AvgPool2d,
    *normalization.MODULES,
    *rnn.MODULES,
    activation.ReLU,
    activation.LeakyReLU,
    activation.PReLU,
    activation.Sigmoid,
    activation.Tanh,
    activation.Softmax,
    activation.LogSoftmax,
    activation.GELU,
    activation.ELU,
    activation.Softplus,
    activation.Hardtanh,
    activation.SiLU,
    loss.MSELoss,
    loss.L1Loss,
    loss.SmoothL1Loss,
    loss.HuberLoss,
    loss.BCELoss,
    loss.BCEWithLogitsLoss,
    loss.NLLLoss,
    loss.CrossEntropyLoss,
)

# Scripts may subclass every layer (the sandbox reads the mark in the class's own dict).
for _cls in MODULE_CLASSES:
    type.__setattr__(_cls, "__ad_subclass__", True)

# PyTorch's file of each layer, so `print(type(model.fc))` shows
# `<class 'torch.nn.modules.linear.Linear'>` as there (by adcli's file, then by name).
_TORCH_FILES = {"containers": "container", "layers": "linear"}
_TORCH_FILE_OF = {
    "Embedding": "sparse",
    "Flatten": "flatten",
    "Unflatten": "flatten",
    "Dropout": "dropout",
    "Dropout2d": "dropout",
    "MaxPool2d": "pooling",
    "AvgPool2d": "pooling",
    "BatchNorm1d": "batchnorm",
    "BatchNorm2d": "batchnorm",
    "InstanceNorm1d": "instancenorm",
    "InstanceNorm2d": "instancenorm",
}
for _cls in MODULE_CLASSES:
    _file = _cls.__module__.rsplit(".", 1)[1]
    _file = _TORCH_FILE_OF.get(_cls.__name__, _TORCH_FILES.get(_file, _file))
    _cls.__module__ = f"torch.nn.modules.{_file}"
Parameter.__module__ = "torch.nn.parameter"

# New torch.nn.functional names (the older ones are listed in torchapi.FUNCTIONAL_OPS).
FUNCTIONAL_NAMES = (
    "gelu elu silu hardtanh binary_cross_entropy_with_logits embedding bilinear dropout dropout2d"
).split()

# Convolution and pooling (adcli/autograd/convops.py, pooling.py).
_CONV_FUNCTIONAL: dict[str, Any] = {
    "conv1d": convops.conv1d,
    "conv2d": convops.conv2d,
    "max_pool2d": pooling.max_pool2d,
    "avg_pool2d": pooling.avg_pool2d,
}

INIT_NAMES = (
    "uniform_ normal_ constant_ ones_ zeros_ eye_ xavier_uniform_ xavier_normal_ "
    "kaiming_uniform_ kaiming_normal_ calculate_gain"
).split()


def _read_attribute(module: Module, name: str) -> Any:
    """`layer.name` for adcli's own layers: their declared attributes, and what was
    registered under a name a script chose (an OrderedDict given to nn.Sequential,
    add_module, register_buffer, a ParameterDict's keys), as PyTorch's
    Module.__getattr__ finds them."""
    t = type(module)
    if name in t.__ad_attrs__:
        return getattr(module, name)
    d = module.__dict__
    for registry in ("_parameters", "_buffers", "_modules"):
        reg = d.get(registry)
        if reg is not None and name in reg:
            return reg[name]
    if name in d.get("_keys", ()) and name in d:  # a ParameterDict's other values
        return d[name]
    if name in d.get(_SCRIPT_NAMES, ()):  # a plain value a script set
        return d[name]
    raise AttributeError(f"'{t.__name__}' object has no attribute '{name}'", name=name, obj=module)


_SCRIPT_NAMES = "_ad_script_names"


def _write_attribute(module: Module, name: str, value: Any) -> bool:
    """`layer.name = value` on adcli's own layers, as PyTorch's Module.__setattr__: a
    module or Parameter is registered under the script's name (`model.fc = ...`), a
    tensor replaces a buffer of that name, anything else is kept as a plain value.
    A layer's own instance attributes (`in_features`, Dropout's `p`, `weight`) are
    set as PyTorch sets them: Module.__setattr__ checks a parameter's or buffer's
    new value. Its methods and properties, which live on the class, are not
    writable. False (nothing set) for a name the layer itself uses otherwise."""
    t = type(module)
    d = module.__dict__
    if name in t.__ad_attrs__:
        if name in d and not hasattr(t, name):
            setattr(module, name, value)
            return True
        raise AttributeError(f"attribute '{name}' of '{t.__name__}' objects is not writable")
    registries = [d.get(r) or () for r in ("_parameters", "_buffers", "_modules")]
    if hasattr(t, name) or (
        name in d
        and name not in d.get(_SCRIPT_NAMES, ())
        and not any(name in r for r in registries)
    ):
        return False
    setattr(module, name, value)
    if name in d and not any(name in r for r in registries):
        d.setdefault(_SCRIPT_NAMES, set()).add(name)
    return True


#: For adcli.lang.guard.ATTRIBUTE_READERS: how a script reads a layer's attributes.
ATTRIBUTE_READERS: dict[type, Any] = dict.fromkeys(MODULE_CLASSES, _read_attribute)
#: For adcli.lang.guard.ATTRIBUTE_WRITERS: how a script sets them.
ATTRIBUTE_WRITERS: dict[type, Any] = dict.fromkeys(MODULE_CLASSES, _write_attribute)


def tables() -> dict[str, dict[str, Any]]:
    """The members of torch.nn, torch.nn.init, torch.nn.utils, torch.nn.parameter, the
    new torch.nn.functional names and torch.func.functional_call, by dotted module name."""
    nn: dict[str, Any] = {cls.__name__: cls for cls in MODULE_CLASSES}
    nn.update(
        Parameter=Parameter,
        functional="module:torch.nn.functional",
        init="module:torch.nn.init",
        utils="module:torch.nn.utils",
        parameter="module:torch.nn.parameter",
    )
    return {
        "torch.nn": nn,
        "torch.nn.init": {name: getattr(init, name) for name in INIT_NAMES},
        "torch.nn.utils": {
            "clip_grad_norm_": utils.clip_grad_norm_,
            "clip_grad_value_": utils.clip_grad_value_,
            "parameters_to_vector": utils.parameters_to_vector,
            "vector_to_parameters": utils.vector_to_parameters,
        },
        "torch.nn.parameter": {"Parameter": Parameter},
        "torch.nn.functional": {
            **{name: getattr(ops, name) for name in FUNCTIONAL_NAMES},
            **normalization.FUNCTIONS,
            **_CONV_FUNCTIONAL,
        },
        "torch": {
            "conv1d": convops.conv1d,
            "conv2d": convops.conv2d,
            "max_pool2d": pooling.max_pool2d_torch,
        },
        "torch.func": {"functional_call": stateless.functional_call},
    }


__all__ = [
    "ATTRIBUTE_READERS",
    "ATTRIBUTE_WRITERS",
    "MODULE_CLASSES",
    "Module",
    "Parameter",
    "tables",
]
