"""PyTorch's profiler summary table (`key_averages().table()`), drawn from events or
averages that have `key`, `count`, `cpu_time`, `cpu_time_total`, `self_cpu_time_total`
and `input_shapes`: the same columns, widths, units and sort order."""

from __future__ import annotations

from typing import Any


def format_time(us: float) -> str:
    """Microseconds as PyTorch prints them: s, ms or us with three decimals."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _in_unit(us: float, unit: str | None) -> str:
    if unit == "s":
        return f"{us / 1e6:.3f}s"
    if unit == "ms":
        return f"{us / 1e3:.3f}ms"
    if unit == "us":
        return f"{us:.3f}us"
    return format_time(us)


def _share(part: float, whole: float) -> str:
    if whole == 0:
        return "NaN"
    return f"{part * 100.0 / whole:.2f}%"


_SORT_KEYS = {"cuda": "device", "xpu": "device", "privateuse1": "device"}


def _sort_attr(sort_by: str) -> str:
    for old, new in _SORT_KEYS.items():
        sort_by = sort_by.replace(old, new)
    return sort_by


def build_table(
    events: list[Any],
    sort_by: str | None,
    row_limit: int,
    max_name_width: int | None,
    max_shapes_width: int | None,
    header: str | None,
    top_level_only: bool,
    time_unit: str | None,
) -> str:
    """PyTorch's profiler summary: Name, Self CPU %, Self CPU, CPU total %, CPU total,
    CPU time avg, # of Calls (and Input Shapes when recorded), each column 12 wide
    (the name as wide as the longest, at most `max_name_width`), two spaces apart."""
    if not events:
        return ""
    if sort_by is not None:
        attr = _sort_attr(sort_by)
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    with_shapes = any(e.input_shapes for e in events)
    name_w = max(len(e.key) for e in events) + 4
    if max_name_width is not None:
        name_w = min(name_w, max_name_width)
    shapes_w = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_width is not None:
        shapes_w = min(shapes_w, max_shapes_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    headers.append("# of Calls")
    widths = [name_w] + [12] * (len(headers) - 1)
    if with_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_w)

    def row(values: list[Any]) -> str:
        return "".join(f"{v!s:>{w}}  " for v, w in zip(values, widths, strict=True))

    sep = "".join("-" * w + "  " for w in widths)
    length = sum(w + 2 for w in widths) - 2
    total = sum(e.self_cpu_time_total for e in events)
    lines: list[str] = []
    if header is not None:
        lines += ["=" * length, header]
    if top_level_only:
        lines += ["=" * length, "This report only display top-level ops statistics"]
    lines += [sep, row(headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_only and getattr(e, "cpu_parent", None) is not None:
            continue
        shown += 1
        name = e.key
        if max_name_width is not None and len(name) >= max_name_width - 3:
            name = name[: max_name_width - 3] + "..."
        values = [
            name,
            _share(e.self_cpu_time_total, total),
            _in_unit(e.self_cpu_time_total, time_unit),
            _share(e.cpu_time_total, total),
            _in_unit(e.cpu_time_total, time_unit),
            _in_unit(e.cpu_time, time_unit),
            e.count,
        ]
        if with_shapes:
            values.append(str(e.input_shapes)[:shapes_w])
        lines.append(row(values))
    lines += [sep, f"Self CPU time total: {_in_unit(total, time_unit)}"]
    return "\n".join(lines) + "\n"
