"""`torch.einsum`, lowered as PyTorch 2.13 lowers it (without opt_einsum): each operand
diagonalised for repeated subscripts, unsqueezed and permuted to one shared order of
labels (output labels first, then the contracted ones), then combined left to right by
`mul` or by permute / reshape / `bmm` / view / permute. Every step is an existing
differentiable op, so gradients, double backward and the grad_fn chain (ViewBackward0
on top of a contraction, MulBackward0 for an outer product, PermuteBackward0 for a
transpose, SumBackward1 for a one-operand reduction) follow PyTorch's."""

from __future__ import annotations

import math
from typing import Any

from . import ops
from .tensor import Tensor

_ELLIPSIS = -1


def _label(ch: str) -> int:
    """PyTorch's label order: A-Z before a-z (so implicit outputs sort that way)."""
    return ord(ch) - ord("A") if ch <= "Z" else 26 + ord(ch) - ord("a")


def _subscript(label: int) -> str:
    return chr(ord("A") + label) if label < 26 else chr(ord("a") + label - 26)


def _parse_term(text: str, start: int, what: str) -> list[int]:
    """One operand's (or the output's) subscripts: labels and at most one ellipsis.
    `start` is the term's index in the whole equation (for the error's position);
    `what` names the term in PyTorch's errors ("operand 0", "output")."""
    labels: list[int] = []
    dots = 0
    found_ellipsis = False
    for k, ch in enumerate(text):
        if ch == " ":
            continue
        if ch == ".":
            if found_ellipsis:
                raise RuntimeError(
                    f"einsum(): found '.' for {what} but an ellipsis (...) was already found"
                )
            dots += 1
            if dots == 3:
                labels.append(_ELLIPSIS)
                found_ellipsis = True
                dots = 0
            continue
        if dots:
            break
        if not ("a" <= ch <= "z" or "A" <= ch <= "Z"):
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {start + k} in the equation "
                "string, subscripts must be in [a-zA-Z]"
            )
        labels.append(_label(ch))
    if dots:
        raise RuntimeError(f"einsum(): found '.' for {what} that is not part of any ellipsis")
    return labels


def _operands(args: tuple[Any, ...]) -> tuple[str, list[Tensor]]:
    """The equation and the operands, given as varargs or as one list or tuple."""
    if len(args) < 2:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, or at "
            "least one operand and its subscripts list"
        )
    equation, rest = args[0], args[1:]
    if not isinstance(equation, str):
        raise NotImplementedError(
            "adcli's einsum takes the equation as a string first: torch.einsum('ij,jk->ik', a, b)"
        )
    if len(rest) == 1 and isinstance(rest[0], (list, tuple)):
        rest = tuple(rest[0])
        if not rest:
            raise ValueError(
                "einsum(): must specify the equation string and at least one operand, or at "
                "least one operand and its subscripts list"
            )
    for i, t in enumerate(rest):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"expected Tensor as element {i} in argument 1, but got {ops._type_name(t)}"
            )
    return equation, list(rest)


def einsum(*args: Any) -> Tensor:
    """Sum of products over the subscripts an Einstein-summation equation names."""
    equation, operands = _operands(args)
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    terms: list[list[int]] = []
    start = 0
    for part in lhs.split(","):
        terms.append(_parse_term(part, start, f"operand {len(terms)}"))
        start += len(part) + 1
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")

    # each operand's dims against its subscripts; the ellipsis' dims
    counts = [0] * 52
    ell_dims = 0
    for i, (labels, t) in enumerate(zip(terms, operands, strict=True)):
        nd = t.data_.ndim
        has_ell = _ELLIPSIS in labels
        named = len(labels) - has_ell
        if (has_ell and nd < named) or (not has_ell and nd != named):
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({named}) is more than the "
                f"number of dimensions ({nd}) for operand {i}"
                if has_ell
                else f"einsum(): the number of subscripts in the equation ({named}) does not "
                f"match the number of dimensions ({nd}) for operand {i} and no ellipsis was given"
            )
        if has_ell:
            ell_dims = max(ell_dims, nd - named)
        for lab in labels:
            if lab != _ELLIPSIS:
                counts[lab] += 1

    # the shared order of labels: the output's first, then the contracted ones
    perm_of = [-1] * 52
    perm_index = 0
    ell_index = 0
    out_has_ell = False
    if arrow < 0:
        out_has_ell = True  # implicit output: the ellipsis' dims, then once-seen labels
        perm_index = ell_dims
        for lab in range(52):
            if counts[lab] == 1:
                perm_of[lab] = perm_index
                perm_index += 1
    else:
        out_text = equation[arrow + 2 :]
        for lab in _parse_term(out_text, arrow + 2, "output"):
            if lab == _ELLIPSIS:
                if out_has_ell:
                    raise RuntimeError(
                        "einsum(): found '.' for output but an ellipsis (...) was already found"
                    )
                out_has_ell = True
                ell_index = perm_index
                perm_index += ell_dims
                continue
            if counts[lab] == 0:
                raise RuntimeError(
                    f"einsum(): output subscript {_subscript(lab)} does not appear in the "
                    "equation for any input operand"
                )
            if perm_of[lab] != -1:
                raise RuntimeError(
                    f"einsum(): output subscript {_subscript(lab)} appears more than once in "
                    "the output"
                )
            perm_of[lab] = perm_index
            perm_index += 1
    out_size = perm_index
    if not out_has_ell:
        ell_index = perm_index
        perm_index += ell_dims
    for lab in range(52):
        if counts[lab] and perm_of[lab] == -1:
            perm_of[lab] = perm_index
            perm_index += 1

    permuted = [
        _permute_operand(i, t, terms[i], perm_of, perm_index, ell_index, ell_dims)
        for i, t in enumerate(operands)
    ]
    last_op = _broadcast_check(operands, permuted, perm_index, ell_index, ell_dims, perm_of)

    result = permuted[0]
    if len(permuted) == 1:
        if perm_index > out_size:
            return ops.sum(result, list(range(out_size, perm_index)))
        return result
    # contracted dims only the first operand has: summed (kept as size 1) right away
    for d in range(out_size, perm_index):
        if last_op[d] == 0 and result.data_.shape[d] != 1:
            result = ops.sum(result, d, True)
    for i in range(1, len(permuted)):
        operand = permuted[i]
        sum_dims = []
        for d in range(out_size, perm_index):
            if last_op[d] != i:
                continue
            if result.data_.shape[d] == 1:
                operand = ops.sum(operand, d, True)
            else:
                sum_dims.append(d)
        if sum_dims:
            result = _sumproduct_pair(result, operand, sum_dims)
        else:
            result = ops.mul(result, operand)
    if perm_index > out_size:
        result = ops.view(result, result.data_.shape[:out_size])
    return result


def _permute_operand(
    i: int,
    t: Tensor,
    labels: list[int],
    perm_of: list[int],
    perm_index: int,
    ell_index: int,
    ell_dims: int,
) -> Tensor:
    """Operand i with one dim per label of the shared order (size 1 where it lacks it)."""
    perm = [-1] * perm_index
    dim_of = [-1] * 52
    j = 0
    for lab in labels:
        if lab == _ELLIPSIS:
            missing = ell_dims - (t.data_.ndim - len(labels) + 1)
            for _ in range(missing):
                t = ops.unsqueeze(t, j)
            for k in range(ell_dims):
                perm[ell_index + k] = j
                j += 1
        elif dim_of[lab] != -1:  # a repeated subscript: its diagonal, in the first's place
            d = dim_of[lab]
            n1, n2 = t.data_.shape[j], t.data_.shape[d]
            if n1 != n2:
                raise RuntimeError(
                    f"einsum(): subscript {_subscript(lab)} is repeated for operand {i} but the "
                    f"sizes don't match, {n1} != {n2}"
                )
            t = ops.movedim(ops.diagonal(t, 0, d, j), -1, d)
        else:
            dim_of[lab] = j
            perm[perm_of[lab]] = j
            j += 1
    for k in range(perm_index):
        if perm[k] == -1:
            t = ops.unsqueeze(t, -1)
            perm[k] = j
            j += 1
    return ops.permute(t, perm)


def _broadcast_check(
    operands: list[Tensor],
    permuted: list[Tensor],
    perm_index: int,
    ell_index: int,
    ell_dims: int,
    perm_of: list[int],
) -> list[int]:
    """For each dim, the last operand where it is not 1; PyTorch's error when sizes
    disagree (other than 1)."""
    last_op = [0] * perm_index
    for d in range(perm_index):
        size = permuted[0].data_.shape[d]
        for i in range(1, len(permuted)):
            n = permuted[i].data_.shape[d]
            if size != n and size != 1 and n != 1:
                if ell_index <= d < ell_index + ell_dims:
                    raise RuntimeError(
                        f"einsum(): dimension {d - ell_index} covered by ellipsis in operand "
                        f"{i}has size {n} which does not broadcast with previously seen ellipsis "
                        f"with size {size} for the respective dimension"
                    )
                lab = _subscript(perm_of.index(d))
                raise RuntimeError(
                    f"einsum(): subscript {lab} has size {n} for operand {i} which does not "
                    f"broadcast with previously seen size {size}"
                )
            if n != 1:
                size = n
                last_op[d] = i
    return last_op


def _sumproduct_pair(left: Tensor, right: Tensor, sum_dims: list[int]) -> Tensor:
    """(left * right) summed over sum_dims (kept as size 1), through one bmm: dims in
    both (batch), left only, summed, right only; then back to the original order."""
    nd = left.data_.ndim
    ls, rs = left.data_.shape, right.data_.shape
    lro: list[int] = []
    lo: list[int] = []
    ro: list[int] = []
    sum_size = 1
    summed = set(sum_dims)
    for d in range(nd):
        sl, sr = ls[d] != 1, rs[d] != 1
        if d in summed:
            if sl and sr:
                sum_size *= ls[d]
            elif sl:
                left = ops.sum(left, d, True)
            elif sr:
                right = ops.sum(right, d, True)
        elif sl and sr:
            lro.append(d)
        elif sl:
            lo.append(d)
        else:
            ro.append(d)
    lro_size = math.prod(ls[d] for d in lro)
    lo_size = math.prod(ls[d] for d in lo)
    ro_size = math.prod(rs[d] for d in ro)
    out_shape = (
        [ls[d] for d in lro] + [ls[d] for d in lo] + [1] * len(sum_dims) + [rs[d] for d in ro]
    )
    lperm = lro + lo + sum_dims + ro
    rperm = lro + sum_dims + ro + lo
    operm = [0] * nd
    for k, d in enumerate(lro + lo + sum_dims + ro):
        operm[d] = k
    left = ops.reshape(ops.permute(left, lperm), (lro_size, lo_size, sum_size))
    right = ops.reshape(ops.permute(right, rperm), (lro_size, sum_size, ro_size))
    result = ops.view(ops.bmm(left, right), tuple(out_shape))
    return ops.permute(result, operm)
