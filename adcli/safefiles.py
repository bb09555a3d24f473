"""Writing files the commands are asked to write, never through a symbolic link.

`adcli graph -o FILE` and the REPL's `.save FILE` write where a user says, but a
planted link (`sub -> ~`, `out.dot -> ~/.bashrc`) must not redirect the write,
and an existing file is overwritten only when the user says so (`--force`, or
an answer at the REPL). The final name is opened with O_NOFOLLOW|O_EXCL (or
O_TRUNC when overwriting), and every folder on the way from the working
directory to it must be a real folder, not a link. Standard library only.
"""

from __future__ import annotations

import os

__all__ = ["Refused", "link_on_path", "link_problem", "write_file"]


class Refused(Exception):
    """A write refused for safety; the message says why, as one line."""


def link_on_path(path: str) -> str | None:
    """The first symbolic link among `path` itself and the folders leading to it from
    the working directory (all of them for a relative path), or None."""
    full = os.path.abspath(path)
    cwd = os.getcwd()
    parts: list[str] = []
    if os.path.commonpath([full, cwd]) == cwd:
        relative = os.path.relpath(full, cwd)
        here = cwd
        for part in relative.split(os.sep):
            if part in ("", "."):
                continue
            here = os.path.join(here, part)
            parts.append(here)
    else:
        parts.append(full)
    for candidate in parts:
        if os.path.islink(candidate):
            return candidate
    return None


def link_problem(path: str) -> str | None:
    """`refusing to write 'PATH': ...` when a symbolic link is on the way, else None."""
    link = link_on_path(path)
    if link is None:
        return None
    what = "it is" if os.path.abspath(path) == link else f"'{link}' is"
    return f"refusing to write '{path}': {what} a symbolic link"


def write_file(path: str, data: str | bytes, *, overwrite: bool = False) -> None:
    """Write `data` to `path` (text as UTF-8). Raises Refused for a symbolic link on the way,
    FileExistsError when the file exists and not `overwrite`, OSError otherwise."""
    problem = link_problem(path)
    if problem is not None:
        raise Refused(problem)
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_TRUNC if overwrite else os.O_EXCL
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        if getattr(e, "errno", None) == getattr(os, "ELOOP", -1) or os.path.islink(path):
            raise Refused(f"refusing to write '{path}': it is a symbolic link") from None
        raise
    if isinstance(data, bytes):
        with open(fd, "wb") as fb:
            fb.write(data)
        return
    with open(fd, "w", encoding="utf-8", newline="") as f:
        f.write(data)
