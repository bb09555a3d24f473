"""torch.autograd.profiler: `profile`, `record_function`, `key_averages().table()`.

While a `profile` context is open, every operation a script applies (one
`Function.apply`, see node.py) is one event named as PyTorch's dispatcher names it
(`aten::mul`), and every node the backward engine runs gives PyTorch's two nested
events (`autograd::engine::evaluate_function: MulBackward0` around `MulBackward0`), with
the operations its formula applies inside. Times are wall-clock microseconds; an
event's self time is its total less its children's totals, as PyTorch counts them.

When no profile is open, `node.prof_hook` and `node.prof` are None: an operation
pays one global test. The names and trees of ranges PyTorch records per op are in
profiler_names.py; the summary table is drawn by profiler_table.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from . import node as _node
from .config import config as _config
from .profiler_names import (
    FACTORY_SPECS,
    INPLACE_SPECS,
    KEEPDIM_SPECS,
    TO,
    Spec,
    op_spec,
    parse_spec,
    roots_of_text,
    spec_of_text,
)
from .profiler_table import build_table, format_time

# The open profile (one at a time, as PyTorch's per-thread profiler state).
active: Profile | None = None

_NOT_FINISHED = "Expected profiling results"
_USE_CUDA_DEPRECATED = (
    "The attribute `use_cuda` will be deprecated soon, please use ``use_device = 'cuda'`` instead."
)


class FunctionEvent:
    """One recorded range: its name (`key`), times in microseconds, its children."""

    __ad_attrs__ = frozenset(
        {
            "name",
            "key",
            "count",
            "cpu_time",
            "cpu_time_total",
            "self_cpu_time_total",
            "input_shapes",
            "cpu_children",
            "cpu_parent",
            "device_time_total",
            "self_device_time_total",
            "cuda_time_total",
            "self_cuda_time_total",
            "cpu_memory_usage",
            "self_cpu_memory_usage",
        }
    )
    __ad_type_name__ = "FunctionEvent"

    def __init__(self, name: str, start: int, shapes: list[list[int]], parent: Any) -> None:
        self.name = name
        self.start_ns = start
        self.end_ns = start
        self.input_shapes = shapes
        self.cpu_parent = parent
        self.cpu_children: list[FunctionEvent] = []
        self.count = 1
        self.device_time_total = self.self_device_time_total = 0.0
        self.cuda_time_total = self.self_cuda_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0  # (memory is not profiled)

    @property
    def key(self) -> str:
        """What key_averages groups by: the name."""
        return self.name

    @property
    def cpu_time_total(self) -> float:
        """Wall time from start to end, in microseconds."""
        return (self.end_ns - self.start_ns) / 1000.0

    @property
    def self_cpu_time_total(self) -> float:
        """The total less the children's totals."""
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self) -> float:
        """The average per call (one call)."""
        return self.cpu_time_total

    def __repr__(self) -> str:
        return (
            f"<FunctionEvent name={self.name} cpu_time={format_time(self.cpu_time_total)} "
            f"input_shapes={self.input_shapes}>"
        )


class FunctionEventAvg:
    """Events of one key added up: count, total and self times (microseconds)."""

    __ad_attrs__ = frozenset(
        {
            "key",
            "count",
            "cpu_time",
            "cpu_time_total",
            "self_cpu_time_total",
            "input_shapes",
            "device_time_total",
            "self_device_time_total",
            "cuda_time_total",
            "self_cuda_time_total",
            "cpu_memory_usage",
            "self_cpu_memory_usage",
        }
    )
    __ad_type_name__ = "FunctionEventAvg"

    def __init__(self, key: str | None, input_shapes: Any) -> None:
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.cuda_time_total = self.self_cuda_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0  # (memory is not profiled)

    def add(self, other: Any) -> FunctionEventAvg:
        """Add an event (or another average) in."""
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        return self

    @property
    def cpu_time(self) -> float:
        """The average time per call."""
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    def __repr__(self) -> str:
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time="
            f"{format_time(self.self_cpu_time_total)} cpu_time={format_time(self.cpu_time)}  "
            "self_cuda_time=0.000us cuda_time=0.000us input_shapes="
            f"{self.input_shapes if self.input_shapes is not None else []} "
            "cpu_memory_usage=0 cuda_memory_usage=0>"
        )


class EventList(list):  # type: ignore[type-arg]
    """A list of events (or of averages) that can print PyTorch's summary table."""

    __ad_attrs__ = frozenset(
        {"table", "key_averages", "total_average", "self_cpu_time_total", "append"}
    )
    __ad_type_name__ = "EventList"

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_src_column_width: int = 75,
        max_name_column_width: int = 55,
        max_shapes_column_width: int = 80,
        header: str | None = None,
        top_level_events_only: bool = False,
        time_unit: str | None = None,
    ) -> str:
        """PyTorch's summary table: one row per entry, sorted by `sort_by` (largest first)."""
        return build_table(
            list(self),
            sort_by,
            row_limit,
            max_name_column_width,
            max_shapes_column_width,
            header,
            top_level_events_only,
            time_unit,
        )

    def __str__(self) -> str:
        return self.table()

    @property
    def self_cpu_time_total(self) -> float:
        """The self times of all entries, added up (microseconds)."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False) -> EventList:
        """One average per name (and input shapes), in order of first appearance."""
        groups: dict[Any, FunctionEventAvg] = {}
        for e in self:
            k = (e.key, str(e.input_shapes)) if group_by_input_shapes else e.key
            avg = groups.get(k)
            if avg is None:
                shapes = e.input_shapes if group_by_input_shapes else None
                avg = groups[k] = FunctionEventAvg(e.key, shapes)
            avg.add(e)
        return EventList(groups.values())

    def total_average(self) -> FunctionEventAvg:
        """Every entry added into one average, keyed "Total"."""
        total = FunctionEventAvg("Total", None)
        for e in self:
            total.add(e)
        return total


class Profile:
    """`torch.autograd.profiler.profile`: records the operations run inside the block."""

    __ad_context__ = True
    __ad_attrs__ = frozenset(
        {
            "key_averages",
            "table",
            "total_average",
            "function_events",
            "events",
            "self_cpu_time_total",
            "enabled",
            "record_shapes",
            "export_chrome_trace",
        }
    )
    __ad_type_name__ = "profile"

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_cuda: bool = False,
        use_device: str | None = None,
        record_shapes: bool = False,
        with_flops: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_modules: bool = False,
        use_kineto: bool = False,
        use_cpu: bool = True,
        experimental_config: Any = None,
        acc_events: bool = False,
        custom_trace_id_callback: Any = None,
    ) -> None:
        self.enabled = enabled
        self.record_shapes = record_shapes
        if use_cuda:  # PyTorch's two warnings on a CPU-only build
            _config.warn(_USE_CUDA_DEPRECATED)
            _config.warn("CUDA is not available, disabling CUDA profiling")
        self._events: list[FunctionEvent] = []
        self._stack: list[FunctionEvent] = []
        self._finished: EventList | None = None
        self._entered = False
        self._nested = False

    # -- the context -------------------------------------------------------
    def __enter__(self) -> Profile | None:
        global active
        if not self.enabled:
            return None  # (as PyTorch: `with profile(enabled=False) as p` binds None)
        if self._entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._entered = True
        if active is not None:  # PyTorch does not refuse a nested profile: the outer one
            self._nested = True  # keeps recording, this one gets nothing
            return self
        active = self
        _node.prof_hook = _record_apply
        _node.prof = self
        return self

    def __exit__(self, *exc: object) -> bool:
        global active
        if self._nested:
            self._finished = EventList()
            return False
        if not self.enabled or active is not self:
            return False
        active = None
        _node.prof_hook = None
        _node.prof = None
        now = time.perf_counter_ns()
        while self._stack:  # ranges an error left open end here
            self._stack.pop().end_ns = now
        self._finished = EventList(self._events)
        return False

    # -- recording -----------------------------------------------------------
    def begin(self, name: str, shapes: list[list[int]] | None = None) -> FunctionEvent:
        """Open a range named `name` inside the innermost open one."""
        parent = self._stack[-1] if self._stack else None
        ev = FunctionEvent(
            name, time.perf_counter_ns(), shapes if shapes is not None else [], parent
        )
        if parent is not None:
            parent.cpu_children.append(ev)
        self._events.append(ev)
        self._stack.append(ev)
        return ev

    def emit(self, specs: tuple[Spec, ...]) -> None:
        """Record the trees `specs` (empty ranges) inside the innermost open range."""
        todo: list[Any] = [(spec, False) for spec in reversed(specs)]
        while todo:
            item, closing = todo.pop()
            if closing:
                self.end(item)
                continue
            ev = self.begin(item[0])
            todo.append((ev, True))
            todo.extend((child, False) for child in reversed(item[1]))

    def end(self, ev: FunctionEvent) -> None:
        """Close `ev` (and any range left open inside it)."""
        now = time.perf_counter_ns()
        stack = self._stack
        while stack:
            top = stack.pop()
            top.end_ns = now
            if top is ev:
                break

    # -- results -------------------------------------------------------------
    @property
    def function_events(self) -> EventList:
        """Every recorded range, in the order they started."""
        if self._finished is None:
            raise AssertionError(_NOT_FINISHED)
        return self._finished

    def events(self) -> EventList:
        """The recorded ranges (as `function_events`)."""
        return self.function_events

    def key_averages(
        self,
        group_by_input_shape: bool = False,
        group_by_stack_n: int = 0,
        group_by_overload_name: bool = False,
    ) -> EventList:
        """Averages of the events by name (and by input shapes when asked)."""
        return self.function_events.key_averages(group_by_input_shape)

    def total_average(self) -> FunctionEventAvg:
        """All events added into one average."""
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The self times of all events, added up (microseconds)."""
        return self.function_events.self_cpu_time_total

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_src_column_width: int = 75,
        max_name_column_width: int = 55,
        max_shapes_column_width: int = 80,
        header: str | None = None,
        top_level_events_only: bool = False,
    ) -> str:
        """The table of every event (not averaged), as PyTorch's `prof.table()`."""
        return self.function_events.table(
            sort_by,
            row_limit,
            max_src_column_width,
            max_name_column_width,
            max_shapes_column_width,
            header,
            top_level_events_only,
        )

    def export_chrome_trace(self, path: str) -> None:
        """Not available: a script writes no trace files."""
        raise NotImplementedError("adcli does not support export_chrome_trace yet")

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        if self._finished is None:
            return "<unfinished torch.autograd.profile>"
        return str(self._finished)


class record_function:
    """A labelled range of the script's own: one event around the block while a
    profile is open (nothing otherwise)."""

    __ad_context__ = True
    __ad_attrs__ = frozenset({"name", "args"})
    __ad_type_name__ = "record_function"

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._ev: FunctionEvent | None = None
        self._prof: Profile | None = None

    def __enter__(self) -> record_function:
        if active is not None:
            self._prof = active
            self._ev = active.begin(self.name)
        return self

    def __exit__(self, *exc: object) -> bool:
        if self._prof is not None and self._ev is not None:
            self._prof.end(self._ev)
        self._prof = self._ev = None
        return False


def _shapes(inputs: Iterable[Any]) -> list[list[int]]:
    return [list(t.data_.shape) if hasattr(t, "data_") else [] for t in inputs]


def _record_apply(cls: type, inputs: tuple[Any, ...], params: dict[str, Any]) -> Any:
    """Function.apply while a profile is open: the op's events around the real apply
    (hook off meanwhile, so the apply below runs as usual)."""
    prof = active
    if prof is None:  # pragma: no cover (the hook is removed with the profile)
        _node.prof_hook = None
        return cls.apply(*inputs, **params)  # type: ignore[attr-defined]
    name, children = op_spec(cls)
    if params.get("keepdim") is True:  # a reduction keeping its dims: no squeezing view
        keep = KEEPDIM_SPECS.get(getattr(cls, "grad_fn_name", ""))
        if keep is not None:
            name, children = spec_of_text(keep)
    if prof.pending_name is not None:  # (reshape's view without grad: _reshape_alias)
        name, children = spec_of_text(prof.pending_name)
        prof.pending_name = None
    if prof.pending_inplace:  # (Tensor._inplace runs `add_` as `add`, then writes)
        prof.pending_inplace = False
        inplace = INPLACE_SPECS.get(getattr(cls, "grad_fn_name", ""))
        if inplace is not None:
            name, children = spec_of_text(inplace)
        elif not name.endswith("_"):
            name += "_"
    shapes = _shapes(inputs) if prof.record_shapes else None
    ev = prof.begin(name, shapes)
    _node.prof_hook = None
    try:
        return cls.apply(*inputs, **params)  # type: ignore[attr-defined]
    finally:
        _node.prof_hook = _record_apply
        if children:
            prof.emit(children)
        for t in inputs:  # a Python number operand: PyTorch converts the wrapped scalar
            if type(t) in _NUMBER:
                prof.emit(_TO_SPEC)
        if type(params.get("other")) is int and cls.__name__ == "MulScalar":
            prof.emit(_TO_SPEC)  # (C++'s `t * 2`: an integer scalar converted, measured)
        prof.end(ev)


Profile.pending_inplace = False  # type: ignore[attr-defined]
Profile.pending_name = None  # type: ignore[attr-defined]


def rename_next(name: str) -> None:
    """The next op recorded takes PyTorch's ranges `name` (a spec: the kernel a
    composite picked, with its inner ranges)."""
    if active is not None:
        active.pending_name = name  # type: ignore[attr-defined]


def mark_inplace() -> None:
    """The next op recorded is an in-place one (`add_`): its name takes a trailing `_`."""
    if active is not None:
        active.pending_inplace = True  # type: ignore[attr-defined]


_NUMBER = frozenset({int, float, bool, complex})
_TO_SPEC = (parse_spec(TO),)


def within(name: str, fn: Any, *args: Any) -> Any:
    """`fn(*args)` inside a range `name`: a composite op (aten::linear) around the ops
    it applies."""
    prof = active
    if prof is None:
        return fn(*args)
    ev = prof.begin(name)
    try:
        return fn(*args)
    finally:
        prof.end(ev)


def within_spec(text: str, fn: Any, *args: Any) -> Any:
    """`fn(*args)` inside the outer range of spec `text`, its inner ranges recorded
    after (an op adcli computes without a Function row: a comparison)."""
    prof = active
    if prof is None:
        return fn(*args)
    name, children = spec_of_text(text)
    ev = prof.begin(name)
    try:
        return fn(*args)
    finally:
        if children:
            prof.emit(children)
        prof.end(ev)


def factory(name: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Factory `name` called by a script while a profile is open: PyTorch's ranges
    around it (the ops adcli applies inside are not PyTorch's: not recorded)."""
    prof = active
    text = FACTORY_SPECS.get(name)
    if prof is None or text is None:
        return fn(*args, **kwargs)
    roots = roots_of_text(text)
    ev = prof.begin(roots[0][0]) if len(roots) == 1 else None
    hook, _node.prof_hook = _node.prof_hook, None
    try:
        return fn(*args, **kwargs)
    finally:
        _node.prof_hook = hook
        if ev is None:
            prof.emit(roots)
        else:
            prof.emit(roots[0][1])
            prof.end(ev)


_record_apply.mark_inplace = mark_inplace  # type: ignore[attr-defined]


# -- torch.profiler ------------------------------------------------------------
class _Activity:
    """One member of `torch.profiler.ProfilerActivity`."""

    __ad_attrs__ = frozenset({"name", "value"})
    __ad_type_name__ = "ProfilerActivity"

    def __init__(self, name: str, value: int) -> None:
        self.name = name
        self.value = value

    def __repr__(self) -> str:
        return f"<ProfilerActivity.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"ProfilerActivity.{self.name}"


# torch.profiler.ProfilerActivity's members (a script reads them as a module's names)
ACTIVITIES = {
    name: _Activity(name, value)
    for value, name in enumerate(("CPU", "XPU", "MTIA", "CUDA", "HPU", "PrivateUse1"))
}


class KinetoProfile(Profile):
    """`torch.profiler.profile`: the same recording, with `activities`, `schedule`
    (ignored: every step is recorded) and `step()`, `start()`, `stop()`."""

    __ad_attrs__ = Profile.__ad_attrs__ | {"step", "start", "stop", "activities"}
    __ad_type_name__ = "profile"

    def __init__(
        self,
        *,
        activities: Iterable[Any] | None = None,
        schedule: Any = None,
        on_trace_ready: Any = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config: Any = None,
        execution_trace_observer: Any = None,
        acc_events: bool = False,
        use_cuda: bool | None = None,
        custom_trace_id_callback: Any = None,
    ) -> None:
        super().__init__(record_shapes=record_shapes)
        self.activities = set(activities) if activities is not None else {ACTIVITIES["CPU"]}
        self._on_trace_ready = on_trace_ready

    def start(self) -> None:
        """Begin recording (as entering the `with` block)."""
        self.__enter__()

    def stop(self) -> None:
        """End recording (as leaving the `with` block)."""
        self.__exit__(None, None, None)

    def step(self) -> None:
        """Mark a step boundary (no schedule is applied: all steps are recorded)."""

    def __exit__(self, *exc: object) -> bool:
        super().__exit__(*exc)
        if self._on_trace_ready is not None and self._finished is not None:
            self._on_trace_ready(self)
        return False


def autograd_profiler_members() -> dict[str, Any]:
    """The names of `torch.autograd.profiler` a script can use."""
    return {
        "profile": Profile,
        "record_function": record_function,
        "EventList": EventList,
        "FunctionEvent": FunctionEvent,
        "FunctionEventAvg": FunctionEventAvg,
    }


def torch_profiler_members() -> dict[str, Any]:
    """The names of `torch.profiler` a script can use."""
    return {
        "profile": KinetoProfile,
        "record_function": record_function,
        "ProfilerActivity": "module:torch.profiler.ProfilerActivity",
    }
