"""The "Did you mean: 'x'?" choice, as Python 3.12 makes it, and the attribute
names it chooses from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# ------------------------------------------------------------------ Did you mean

_MOVE = 2  # cost of inserting, deleting or replacing a character
_CASE = 1  # cost of replacing a character by itself in another case
_MAX_NAME = 40  # Python does not suggest for longer names


def _distance(a: str, b: str, limit: int) -> int:
    """Edit distance with Python's costs; anything over `limit` is `limit + 1`."""
    if a == b:
        return 0
    if abs(len(a) - len(b)) * _MOVE > limit:
        return limit + 1
    prev = [j * _MOVE for j in range(len(b) + 1)]
    for i, ca in enumerate(a, 1):
        row = [i * _MOVE]
        for j, cb in enumerate(b, 1):
            if ca == cb:
                sub = 0
            elif ca.lower() == cb.lower():
                sub = _CASE
            else:
                sub = _MOVE
            row.append(min(prev[j - 1] + sub, prev[j] + _MOVE, row[j - 1] + _MOVE))
        if min(row) > limit:
            return limit + 1
        prev = row
    return prev[-1]


def suggest(wrong: str, candidates: Iterable[str]) -> str | None:
    """The name Python 3.12 would suggest for `wrong` among `candidates` (in order):
    the closest one within about a third of the two names' length, the first on a tie."""
    if len(wrong) > _MAX_NAME:
        return None
    best, best_cost = None, len(wrong)
    for cand in candidates:
        if cand == wrong:
            continue
        limit = (len(cand) + len(wrong) + 3) * _MOVE // 6
        cost = _distance(wrong, cand, limit)
        if cost > limit:
            continue
        if best is None or cost < best_cost:
            best, best_cost = cand, cost
    return best


def attribute_candidates(obj: Any) -> list[str]:
    """The attribute names a script may read on `obj` (sorted, as `dir()`); on a
    host class, also the names its library has that the host lacks (Python suggests
    from the real library's ``dir()``, as PyTorch's traceback does)."""
    from adcli.lang.host import Namespace, library

    t = type(obj)
    names: set[str] = set()
    if t is Namespace:
        names.update(obj.__ad_members__)
    else:
        known = library().classes  # the host's library's names (x.greator: 'greater')
        for klass in t.__mro__:
            names.update(known.get(klass, ()))
            declared = klass.__dict__.get("__ad_attrs__")
            if type(declared) is frozenset:
                names.update(declared)
            elif klass.__module__ not in ("builtins",) and not klass.__module__.startswith(
                "adcli."
            ):
                names.update(klass.__dict__)  # a script class: its methods
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict) and not t.__module__.startswith("adcli."):
            names.update(k for k in d if isinstance(k, str))
        if t in (list, dict, str, tuple, set, frozenset, int, float, bool):
            names.update(dir(t))
    return sorted(n for n in names if isinstance(n, str) and n[:1] != "_" and "$" not in n)
