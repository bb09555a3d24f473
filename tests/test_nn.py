"""torch.nn without PyTorch: Parameter in the engine, registration, the report's names
for parameters, the sandbox around modules. (tests/conformance/scripts/nn_*.ad compare
everything printed with torch 2.13.)"""

from __future__ import annotations

import io
import json
import types

import numpy as np
import pytest

from adcli.autograd import engine, ops
from adcli.autograd.node import Function
from adcli.autograd.tensor import Tensor
from adcli.nn import Module, Parameter, layers
from adcli.nn.hooks import BackwardHookFunction


def run_json(text: str) -> dict:
    from adcli.core.options import RunOptions
    from adcli.core.runner import run_text

    buf = io.StringIO()
    streams = types.SimpleNamespace(out=buf, err=io.StringIO())
    code = run_text(text, "t.ad", RunOptions(json=True, color=False, width=100), streams)
    obj = json.loads(buf.getvalue())
    obj["exit"] = code
    return obj


def test_parameter_is_a_leaf_tensor_and_ops_give_plain_tensors() -> None:
    p = Parameter(ops.tensor([1.0, 2.0]))
    assert isinstance(p, Tensor) and p.is_leaf and p.requires_grad
    y = p * 3 + p
    assert type(y) is Tensor
    y.sum().backward()
    np.testing.assert_allclose(p.grad.data_, [4.0, 4.0])
    assert repr(p).startswith("Parameter containing:\ntensor([1., 2.], requires_grad=True)")


def test_parameter_shares_data_and_version_with_its_source() -> None:
    t = ops.tensor([1.0])
    p = Parameter(t)
    t.add_(1)
    assert p.data_[0] == 2.0 and p._version == 1


def test_parameters_are_saved_and_reach_accumulate_grad() -> None:
    w = Parameter(ops.tensor([[1.0, 2.0]]))
    x = ops.tensor([[3.0, 4.0]])
    out = ops.matmul(x, ops.t(w)).exp()  # saves w through TBackward/MmBackward
    (g,) = engine.grad(out.sum(), [w])
    np.testing.assert_allclose(g.data_, np.exp(11.0) * np.array([[3.0, 4.0]]), rtol=1e-6)


def test_registration_order_and_dict_mirror() -> None:
    lin = layers.Linear(2, 3)
    assert list(lin.__dict__["_parameters"]) == ["weight", "bias"]
    assert lin.__dict__["weight"] is lin.weight
    seq = Module()
    seq.b = Parameter(ops.ones(1))
    seq.a = Parameter(ops.ones(1))
    seq.b = Parameter(ops.zeros(1))  # re-assigned: keeps its place
    assert [n for n, _ in seq.named_parameters()] == ["b", "a"]


def test_backward_hook_node_is_not_an_operation_row() -> None:
    assert "BackwardHookFunction" not in Function.registry
    assert BackwardHookFunction.grad_fn_name == "BackwardHookFunctionBackward"


def test_report_names_parameters_by_their_path() -> None:
    out = run_json(
        "import torch\n"
        "import torch.nn as nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(2, 1)\n"
        "    def forward(self, x):\n"
        "        return self.fc(x)\n"
        "model = Net()\n"
        "w = nn.Parameter(torch.ones(1))\n"
        "loss = (model(torch.ones(3, 2)) * w).sum()\n"
        "loss.backward()\n"
    )
    names = [n["name"] for n in out["events"][0]["nodes"]]
    assert {"model.fc.weight", "model.fc.bias", "w"} <= set(names)


def test_script_values_of_modules_have_their_own_kind() -> None:
    out = run_json("import torch\nlayer = torch.nn.Linear(1, 1)\n")
    assert out["variables"]["layer"] == {"type": "nn_module"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("torch.nn.Linear(1, 1).__dict__", "attribute '__dict__' is not available"),
        ("torch.nn.Linear(1, 1)._parameters", "attribute '_parameters' is not available"),
        ("torch.nn.Linear.reset_parameters", "is not available in adcli scripts"),
    ],
)
def test_sandbox_keeps_module_internals_private(line: str, message: str) -> None:
    out = run_json("import torch\nx = " + line + "\n")
    assert out["exit"] == 1
    assert message in out["error"]["message"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("layer._parameters = {}", "attribute '_parameters' is not available"),
        ("layer.__class__ = int", "attribute '__class__' is not available"),
        ("layer._ad_script_names = set()", "is not available"),
        ("layer.forward = print", "attribute 'forward' of 'Linear' objects is not writable"),
        ("layer.parameters = 3", "attribute 'parameters' of 'Linear' objects is not writable"),
    ],
)
def test_sandbox_keeps_layer_methods_and_internals_unwritable(line: str, message: str) -> None:
    """A layer's public instance attributes are settable (in_features, p...), its
    private names and its class-level methods are not."""
    out = run_json("import torch\nlayer = torch.nn.Linear(1, 1)\n" + line + "\n")
    assert out["exit"] == 1
    assert message in out["error"]["message"]


def test_parameter_containers_register_their_tensors_as_parameters() -> None:
    from adcli.nn.containers import ParameterDict, ParameterList

    plain = ops.ones(2)
    plist = ParameterList([plain, 3])
    p = plist[0]
    assert type(p) is Parameter and p.requires_grad and p.data_ is plain.data_
    assert plist.__dict__["_parameters"] == {"0": p} and plist[1] == 3
    pdict = ParameterDict({"w": plain})
    pdict["w"] = pdict["w"]  # a Parameter already: kept as it is
    assert [n for n, _ in pdict.named_parameters()] == ["w"]
    parent = Module()
    parent.ps = plist
    parent.pd = pdict
    assert [n for n, _ in parent.named_parameters()] == ["ps.0", "pd.w"]


def test_report_names_parameter_container_entries_by_their_path() -> None:
    out = run_json(
        "import torch\n"
        "import torch.nn as nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.ws = nn.ParameterList([torch.ones(2), torch.ones(2)])\n"
        "        self.d = nn.ParameterDict({'b': torch.zeros(1)})\n"
        "model = Net()\n"
        "loss = (model.ws[0] * model.ws[1]).sum() + model.d['b'].sum()\n"
        "loss.backward()\n"
    )
    names = [n["name"] for n in out["events"][0]["nodes"]]
    assert {"model.ws.0", "model.ws.1", "model.d.b"} <= set(names)
    assert out["variables"]["model"] == {"type": "nn_module"}


@pytest.mark.parametrize(
    "line",
    ["torch.nn.ParameterList()._size", "torch.nn.ParameterDict()._keys"],
)
def test_sandbox_keeps_parameter_container_internals_private(line: str) -> None:
    out = run_json("import torch\nx = " + line + "\n")
    assert out["exit"] == 1
    assert "is not available in adcli scripts" in out["error"]["message"]


def test_embedding_from_pretrained_is_reachable_on_the_class() -> None:
    out = run_json(
        "import torch\n"
        "e = torch.nn.Embedding.from_pretrained(torch.ones(2, 3))\n"
        "n = e.weight.shape[1]\n"
    )
    assert out["exit"] == 0 and out["variables"]["n"] == 3
