"""Shrink a failing program to a small one that still shows the same mismatch.

Programs are Python, so shrinking works on the `ast`: first cut everything after the
first differing record, then delta debugging (ddmin) over the top-level statements,
then smaller steps until nothing more can go: unwrap `try`/`with`/`for` blocks,
drop statements inside blocks, drop `print` arguments and keyword arguments, and
replace an expression by one of its parts (a call by its receiver or an argument,
an operator by an operand). Each candidate is kept only when `still_fails(text)`
says the same mismatch is still there (the caller checks that PyTorch runs the
candidate without an uncaught error, so shrinking never drifts into nonsense).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator

Test = Callable[[str], bool]

#: statements the shrinker never removes (the program's header)
PROTECTED = ("import ", "torch.manual_seed(")


class Budget:
    """Counts predicate calls; shrinking stops when it runs out."""

    def __init__(self, test: Test, limit: int) -> None:
        self.test = test
        self.left = limit

    def __call__(self, text: str) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        return self.test(text)


def shrink(
    text: str,
    still_fails: Test,
    budget: int = 400,
    cut_after: str | None = None,
    line: int | None = None,
) -> str:
    """The smallest program found that `still_fails`. `cut_after` is a record tag
    (like '@12'), or `line` a line number, whose statement is where the failure
    shows: everything after it may go at once, and so may everything before it
    that shares no variable with it."""
    test = Budget(still_fails, budget)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    if not test(_unparse(tree)):  # unparsing changed something that matters: keep as is
        return text
    head, body = _split_header(tree.body)
    target = _target_index(body, cut_after, line)
    if target is not None:
        cut = body[: target + 1]
        if target + 1 < len(body) and test(_unparse(_module(head + cut))):
            body = cut
        sliced = _slice(body, min(target, len(body) - 1))
        if len(sliced) < len(body) and test(_unparse(_module(head + sliced))):
            body = sliced
    while test.left > 0:
        before = _unparse(_module(head + body))
        body = _ddmin(head, body, test)
        body = _inline_aliases(head, body, test)
        body = _local_passes(head, body, test)
        if _unparse(_module(head + body)) == before:
            break
    return _unparse(_module(head + body))


def _module(stmts: list[ast.stmt]) -> ast.Module:
    return ast.Module(body=stmts, type_ignores=[])


def _unparse(tree: ast.AST) -> str:
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _split_header(stmts: list[ast.stmt]) -> tuple[list[ast.stmt], list[ast.stmt]]:
    n = 0
    while n < len(stmts) and ast.unparse(stmts[n]).startswith(PROTECTED):
        n += 1
    return stmts[:n], stmts[n:]


def _target_index(body: list[ast.stmt], tag: str | None, line: int | None) -> int | None:
    """The statement that prints record `tag` or holds line `line`."""
    for i, s in enumerate(body):
        if tag is not None:
            src = ast.unparse(s)
            if any(f"'{tag}{c}'" in src for c in ("", "x", "d", "!")):
                return i
        elif line is not None and s.lineno <= line <= (s.end_lineno or s.lineno):
            return i
    return None


_MODULES = {"torch", "F", "e", "print", "repr", "float", "range", "_"}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - _MODULES


def _slice(body: list[ast.stmt], target: int) -> list[ast.stmt]:
    """The target statement and the earlier ones connected to it through shared
    variable names (transitively, walking backwards)."""
    relevant = _names(body[target])
    keep = [body[target]]
    for s in reversed(body[:target]):
        names = _names(s)
        if names & relevant:
            relevant |= names
            keep.append(s)
    return keep[::-1]


def _ddmin(head: list[ast.stmt], body: list[ast.stmt], test: Budget) -> list[ast.stmt]:
    """Classic delta debugging over the statement list (complements only)."""
    n = 2
    while len(body) >= 2 and test.left > 0:
        size = -(-len(body) // n)
        chunks = [body[i : i + size] for i in range(0, len(body), size)]
        for i in range(len(chunks)):
            rest = [s for j, c in enumerate(chunks) if j != i for s in c]
            if test(_unparse(_module(head + rest))):
                body = rest
                n = max(n - 1, 2)
                break
        else:
            if n >= len(body):
                break
            n = min(len(body), 2 * n)
    if len(body) == 1 and test(_unparse(_module(head))):
        return []
    return body


def _inline_aliases(head: list[ast.stmt], body: list[ast.stmt], test: Budget) -> list[ast.stmt]:
    """Drop `a = b` (both names) and read `b` wherever `a` was read."""
    i = 0
    while i < len(body) and test.left > 0:
        s = body[i]
        if (
            isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and isinstance(s.value, ast.Name)
        ):
            old, new = s.targets[0].id, s.value.id
            rest = [_rename(copy.deepcopy(t), old, new) for t in body[i + 1 :]]
            candidate = body[:i] + rest
            if test(_unparse(_module(head + candidate))):
                body = candidate
                continue
        i += 1
    return body


def _rename(tree: ast.stmt, old: str, new: str) -> ast.stmt:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == old:
            node.id = new
    return tree


def _local_passes(head: list[ast.stmt], body: list[ast.stmt], test: Budget) -> list[ast.stmt]:
    """Try every single-node simplification once, keeping each that works."""
    tree = _module(head + body)
    i = 0
    while test.left > 0:
        nodes = list(ast.walk(tree))
        if i >= len(nodes):
            break
        changed = False
        for alt in _alternatives(nodes[i]):
            candidate = _replace(tree, i, alt)
            if candidate is not None and test(_unparse(candidate)):
                tree = candidate
                changed = True
                break
        if not changed:
            i += 1
    return tree.body[len(head) :]


def _replace(tree: ast.Module, index: int, alt: Callable[[ast.AST], object]) -> ast.Module | None:
    """A copy of `tree` with node number `index` (in ast.walk order) replaced by
    `alt(node)`: a node, a list of statements, or None to delete a statement."""
    new = copy.deepcopy(tree)
    target = list(ast.walk(new))[index]
    replacement = alt(target)
    for parent in ast.walk(new):
        for field, value in ast.iter_fields(parent):
            if value is target:
                if not isinstance(replacement, ast.AST):
                    return None
                setattr(parent, field, replacement)
                return new
            if isinstance(value, list) and any(v is target for v in value):
                pos = next(k for k, v in enumerate(value) if v is target)
                if replacement is None:
                    rest = value[:pos] + value[pos + 1 :]
                    if not rest and parent is not new:
                        rest = [ast.Pass()]  # a block cannot be empty
                    value[:] = rest
                elif isinstance(replacement, list):
                    value[pos : pos + 1] = replacement
                else:
                    value[pos] = replacement
                return new
    return None


def _alternatives(node: ast.AST) -> Iterator[Callable[[ast.AST], object]]:
    """Simpler versions of `node`, most aggressive first."""
    if isinstance(node, ast.stmt) and not _protected(node):
        if isinstance(node, (ast.Try, ast.With, ast.For)):
            yield lambda n: n.body  # unwrap the block
        yield lambda n: None  # drop the statement
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "repr":
            return  # print(tag, repr(e)) is how errors are shown
        if isinstance(func, ast.Name) and func.id == "print":
            for k in range(2, len(node.args)):
                yield lambda n, k=k: _drop_arg(n, k)
            return
        for k in range(len(node.keywords)):
            yield lambda n, k=k: _drop_keyword(n, k)
        if isinstance(func, ast.Attribute) and not _is_module(func.value):
            yield lambda n: n.func.value  # x.f(...) -> x
        for k, arg in enumerate(node.args):
            if isinstance(arg, (ast.Name, ast.Call, ast.BinOp, ast.Subscript)):
                yield lambda n, k=k: n.args[k]
    elif isinstance(node, ast.BinOp):
        yield lambda n: n.left
        yield lambda n: n.right
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.operand, ast.Constant):
            yield lambda n: n.operand
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        yield lambda n: n.value
    elif isinstance(node, (ast.List, ast.Tuple)) and len(node.elts) > 1:
        for k in range(len(node.elts)):
            yield lambda n, k=k: _drop_elt(n, k)
    elif isinstance(node, ast.Constant) and isinstance(node.value, float):
        if node.value not in (0.0, 1.0):
            yield lambda n: ast.Constant(1.0)


def _protected(node: ast.stmt) -> bool:
    return ast.unparse(node).startswith(PROTECTED)


def _is_module(node: ast.expr) -> bool:
    """`torch`, `F`, `torch.nn` ...: receivers that are modules, not values."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in ("torch", "F")


def _drop_arg(node: ast.Call, k: int) -> ast.Call:
    node.args = node.args[:k] + node.args[k + 1 :]
    return node


def _drop_keyword(node: ast.Call, k: int) -> ast.Call:
    node.keywords = node.keywords[:k] + node.keywords[k + 1 :]
    return node


def _drop_elt(node: ast.List | ast.Tuple, k: int) -> ast.AST:
    node.elts = node.elts[:k] + node.elts[k + 1 :]
    return node
