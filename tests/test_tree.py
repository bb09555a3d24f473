"""graph(t): the terminal tree, DOT and Mermaid."""

from __future__ import annotations

import sys
import time

from adcli.autograd import dtypes
from adcli.autograd import ops as torch
from adcli.provenance import Label
from adcli.render.tree import MAX_INDENT, graph_dot, graph_mermaid, graph_tree


def lab(t, name, expr, line):
    t._label = Label(name, expr, line)
    return t


def example():
    x = lab(torch.tensor(2.0, requires_grad=True), "x", "tensor(2., requires_grad=True)", 1)
    w = lab(torch.tensor([1.0, 2.0], requires_grad=True), "w", "tensor([1., 2.])", 2)
    a = lab(x * w, None, "x * w", 3)
    s = lab(a.sum(), "s", "a.sum()", 3)
    y = lab(s * s, "y", "s * s", 4)
    return x, w, a, s, y


def test_tree_text():
    *_, y = example()
    assert graph_tree(y) == (
        "MulBackward0 → y  []\n"
        "├── SumBackward0 → s  []\n"
        "│   └── MulBackward0 → x * w  [2]\n"
        "│       ├── x  leaf  []\n"
        "│       └── w  leaf  [2]\n"
        "└── SumBackward0 → s  []  (see above)\n"
    )


def test_tree_of_a_tensor_without_graph():
    c = lab(torch.ones(2), "c", "ones(2)", 1)
    assert graph_tree(c) == "c  [2]  (no graph: requires_grad=False)\n"
    x = lab(torch.ones(2, dtype=dtypes.float64).requires_grad_(), "x", "ones(2)", 1)
    assert graph_tree(x) == "x  leaf  [2] float64\n"


def test_dot_text():
    *_, y = example()
    assert graph_dot(y) == (
        "digraph adcli {\n"
        '  node [shape=box, style="filled,rounded", fontname="monospace", fontsize=10];\n'
        '  n0 [label="x\\n[]", fillcolor=lightblue];\n'
        '  n1 [label="w\\n[2]", fillcolor=lightblue];\n'
        '  n2 [label="MulBackward0\\nx * w\\n[2]", fillcolor=lightgrey];\n'
        '  n3 [label="SumBackward0\\ns\\n[]", fillcolor=lightgrey];\n'
        '  n4 [label="MulBackward0\\ny\\n[]", fillcolor=darkolivegreen1];\n'
        "  n0 -> n2;\n"
        "  n1 -> n2;\n"
        "  n2 -> n3;\n"
        "  n3 -> n4;\n"
        "  n3 -> n4;\n"
        "}\n"
    )


def test_mermaid_text():
    *_, y = example()
    assert graph_mermaid(y) == (
        "flowchart TB\n"
        '  n0["x<br/>[]"]\n'
        '  n1["w<br/>[2]"]\n'
        '  n2["MulBackward0<br/>x * w<br/>[2]"]\n'
        '  n3["SumBackward0<br/>s<br/>[]"]\n'
        '  n4["MulBackward0<br/>y<br/>[]"]\n'
        "  n0 --> n2\n"
        "  n1 --> n2\n"
        "  n2 --> n3\n"
        "  n3 --> n4\n"
        "  n3 --> n4\n"
        "  classDef leaf fill:#add8e6,stroke:#4a708b,color:#000\n"
        "  classDef op fill:#d3d3d3,stroke:#696969,color:#000\n"
        "  classDef root fill:#caff70,stroke:#696969,color:#000\n"
        "  class n0,n1 leaf\n"
        "  class n2,n3 op\n"
        "  class n4 root\n"
    )


def test_ids_are_stable_across_runs():
    first = graph_dot(example()[-1])
    second = graph_dot(example()[-1])
    assert first == second  # no id() or addresses in the text


def test_escaping_user_text():
    x = lab(torch.tensor(1.0, requires_grad=True), None, 'f("a") <b> & \\', 1)
    y = lab(x * 2, None, 'g("<y>")', 2)
    dot = graph_dot(y)
    assert 'label="f(\\"a\\") <b> & \\\\\\n[]"' in dot
    mer = graph_mermaid(y)
    assert 'n0["f(#quot;a#quot;) #lt;b#gt; #amp; \\<br/>[]"]' in mer
    assert 'n1["MulBackward0<br/>g(#quot;#lt;y#gt;#quot;)<br/>[]"]' in mer


def test_long_chain_is_folded_and_fast():
    x = lab(torch.tensor(1.0, requires_grad=True), "x", "tensor(1.)", 1)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    start = time.perf_counter()
    text = graph_tree(y)
    dot = graph_dot(y)
    mer = graph_mermaid(y)
    elapsed = time.perf_counter() - start
    assert text == (
        "MulBackward0  []\n"
        "└── MulBackward0  []\n"
        "    └── MulBackward0  []\n"
        "        └── … 99995 similar nodes\n"
        "            └── MulBackward0  []\n"
        "                └── MulBackward0  []\n"
        "                    └── x  leaf  []\n"
    )
    assert dot.count("->") == 100_000 and "n100000" in dot
    assert mer.count("-->") == 100_000
    del elapsed  # no timing assertion: benchmarks/ measures speed


def test_full_tree_of_a_chain_has_every_node():
    x = lab(torch.tensor(1.0, requires_grad=True), "x", "tensor(1.)", 1)
    y = x
    for _ in range(8):
        y = y * 1.0
    lines = graph_tree(y, full=True).splitlines()
    assert len(lines) == 9 and lines[-1].endswith("x  leaf  []")


def test_deep_branching_graph_continues_below():
    x = lab(torch.tensor(1.0, requires_grad=True), "x", "x", 1)
    w = lab(torch.tensor(0.5, requires_grad=True), "w", "w", 2)
    y = x
    for _ in range(3000):
        y = y * w + x  # no single-input chain: nothing to fold
    limit = sys.getrecursionlimit()
    text = graph_tree(y)
    assert sys.getrecursionlimit() == limit
    lines = text.splitlines()
    assert "(continued below as [1])" in text
    assert any(line.startswith("[1] AddBackward0") for line in lines)
    # indentation never grows past the limit
    assert max(len(line) - len(line.lstrip("│├└─ ")) for line in lines) <= 4 * (MAX_INDENT + 1)
    # every multiplication appears once with its inputs, once more at most as a continuation
    assert sum(line.endswith("MulBackward0  []") for line in lines) == 3000


def test_several_roots_share_nodes():
    x, w, a, s, y = example()
    z = lab(s + 1, "z", "s + 1", 5)
    text = graph_tree([y, z])
    assert text.splitlines()[-2:] == [
        "AddBackward0 → z  []",
        "└── SumBackward0 → s  []  (see above)",
    ]
