"""A layered left-to-right layout for a small graph (the HTML page draws it as SVG).

Graphviz is optional, so the page lays its graphs out itself, the way `dot -Grankdir=LR`
does in outline: every node gets a layer (inputs left of their users), nodes in a layer
are ordered to keep edges short (a few barycenter sweeps), and edges are cubic curves.
It only computes coordinates; it knows nothing about tensors. Loops only, no recursion.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

#: space between layers and between nodes of one layer, in pixels
LAYER_GAP = 56
NODE_GAP = 18
MARGIN = 12
#: barycenter sweeps (each one left to right and back)
SWEEPS = 4


@dataclass
class Placed:
    """Where each node goes (top-left corner) and the path of each edge."""

    x: list[float] = field(default_factory=list)
    y: list[float] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0


def _layers(n: int, edges: list[tuple[int, int]]) -> list[int]:
    """Longest path from the sources; then each node that has users moves right, next to
    its nearest user (a bias used only by the last op sits by it, not at the far left)."""
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for a, b in edges:
        if a != b:
            succ[a].append(b)
            indeg[b] += 1
    order: list[int] = []
    queue = deque(i for i in range(n) if indeg[i] == 0)
    while queue:
        a = queue.popleft()
        order.append(a)
        for b in succ[a]:
            indeg[b] -= 1
            if indeg[b] == 0:
                queue.append(b)
    placed = set(order)
    order += [i for i in range(n) if i not in placed]  # a cycle cannot happen; be safe
    layer = [0] * n
    for a in order:
        for b in succ[a]:
            layer[b] = max(layer[b], layer[a] + 1)
    for a in reversed(order):
        if succ[a]:
            layer[a] = max(layer[a], min(layer[b] for b in succ[a]) - 1)
    return layer


def layout(sizes: list[tuple[float, float]], edges: list[tuple[int, int]]) -> Placed:
    """Positions for nodes of the given (width, height), edges pointing left to right."""
    n = len(sizes)
    placed = Placed()
    if n == 0:
        return placed
    layer = _layers(n, edges)
    count = max(layer) + 1
    rows: list[list[int]] = [[] for _ in range(count)]
    for i in range(n):
        rows[layer[i]].append(i)
    pred: list[list[int]] = [[] for _ in range(n)]
    succ: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        pred[b].append(a)
        succ[a].append(b)
    pos = [0.0] * n
    for row in rows:
        for k, i in enumerate(row):
            pos[i] = k / max(len(row), 1)
    for _ in range(SWEEPS):
        for sweep, near in ((range(1, count), pred), (range(count - 2, -1, -1), succ)):
            for li in sweep:
                row = rows[li]
                keys = {}
                for i in row:
                    nb = near[i]
                    keys[i] = sum(pos[j] for j in nb) / len(nb) if nb else pos[i]
                row.sort(key=lambda i: (keys[i], pos[i]))
                for k, i in enumerate(row):
                    pos[i] = (k + 0.5) / len(row)
    widths = [max(sizes[i][0] for i in row) if row else 0.0 for row in rows]
    heights = [sum(sizes[i][1] for i in row) + NODE_GAP * (len(row) - 1) for row in rows]
    total_h = max(heights)
    xs = [0.0] * n
    ys = [0.0] * n
    x = MARGIN
    for li, row in enumerate(rows):
        y = MARGIN + (total_h - heights[li]) / 2
        for i in row:
            xs[i] = x + (widths[li] - sizes[i][0]) / 2
            ys[i] = y
            y += sizes[i][1] + NODE_GAP
        x += widths[li] + LAYER_GAP
    placed.x, placed.y = xs, ys
    placed.width = x - LAYER_GAP + MARGIN
    placed.height = total_h + 2 * MARGIN
    copies: dict[tuple[int, int], int] = {}
    for a, b in edges:
        k = copies[(a, b)] = copies.get((a, b), -1) + 1
        bend = (k + 1) // 2 * (1 if k % 2 else -1) * 10  # `s * s`: the two edges apart
        x1, y1 = xs[a] + sizes[a][0], ys[a] + sizes[a][1] / 2 + bend
        x2, y2 = xs[b], ys[b] + sizes[b][1] / 2 + bend
        if x2 <= x1:  # same layer (cannot happen with layers from edges): a plain line
            placed.paths.append(f"M{x1:.1f},{y1:.1f} L{x2:.1f},{y2:.1f}")
            continue
        mid = (x2 - x1) / 2
        placed.paths.append(
            f"M{x1:.1f},{y1:.1f} C{x1 + mid:.1f},{y1:.1f} {x2 - mid:.1f},{y2:.1f} "
            f"{x2 - 2:.1f},{y2:.1f}"
        )
    return placed
