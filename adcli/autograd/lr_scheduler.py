"""torch.optim.lr_scheduler: StepLR, MultiStepLR, ExponentialLR and LambdaLR, with
PyTorch 2.13's chainable arithmetic (each step multiplies the group's current lr, so
after k decays the lr is `lr * gamma * ... * gamma`, rounded k times, not
`lr * gamma**k`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .config import config
from .optim import Optimizer

STEP_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 "
    "and later, you should call them in the opposite order: `optimizer.step()` before "
    "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first "
    "value of the learning rate schedule. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)


class LRScheduler:
    """Sets each parameter group's `lr` at every `step()`; `get_last_lr()`."""

    __ad_attrs__ = frozenset(
        {"step", "get_last_lr", "last_epoch", "base_lrs", "optimizer", "state_dict"}
    )

    def __init__(self, optimizer: Any, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming scheduler with last_epoch >= 0."
                    )
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        optimizer._opt_called = False  # set by the optimizer's step()
        self._step_count = 0
        self._initial = True
        self.step()
        self._initial = False

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def _current(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def step(self, epoch: Any = None) -> None:
        """Advance one epoch and set the groups' learning rates."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            config.warn(STEP_ORDER_WARNING)
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = self._current()

    def get_last_lr(self) -> list[float]:
        """The learning rates the last `step()` set."""
        return self._last_lr

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (and LambdaLR's functions)."""
        return {
            k: v for k, v in vars(self).items() if k not in ("optimizer", "lr_lambdas", "_initial")
        }


class LambdaLR(LRScheduler):
    """lr = initial lr * lr_lambda(epoch)."""

    def __init__(self, optimizer: Any, lr_lambda: Any, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(
                    f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [b * f(self.last_epoch) for f, b in zip(self.lr_lambdas, self.base_lrs, strict=True)]


class StepLR(LRScheduler):
    """lr *= gamma every `step_size` epochs."""

    def __init__(
        self, optimizer: Any, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]


class MultiStepLR(LRScheduler):
    """lr *= gamma at each milestone epoch."""

    def __init__(
        self, optimizer: Any, milestones: Any, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._current()
        k = self.milestones[self.last_epoch]
        return [g["lr"] * self.gamma**k for g in self.optimizer.param_groups]


class ExponentialLR(LRScheduler):
    """lr *= gamma every epoch."""

    def __init__(self, optimizer: Any, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._initial:
            return self._current()
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]


def module_members() -> dict[str, Any]:
    """The names of `torch.optim.lr_scheduler`."""
    return {
        "LRScheduler": LRScheduler,
        "LambdaLR": LambdaLR,
        "StepLR": StepLR,
        "MultiStepLR": MultiStepLR,
        "ExponentialLR": ExponentialLR,
    }


for _cls in (LRScheduler, LambdaLR, StepLR, MultiStepLR, ExponentialLR):
    _cls.__module__ = "torch.optim.lr_scheduler"  # printed as PyTorch's classes
