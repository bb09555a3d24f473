"""What every command shares and the fast path of `adcli run` needs too: the
program name, the exit codes and the one-line usage error. Imports nothing heavy.

Exit status: 0 success, 1 script error (or a failed golden test), 2 usage error.
Usage errors are one line on stderr, `adcli: error: ...`, never a traceback.
"""

import os
import stat
import sys

PROG = "adcli"
EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def error(message: str) -> None:
    """Write one `adcli: error: ...` line to stderr."""
    line = " ".join(message.split())  # always one line, whatever the message holds
    sys.stderr.write(f"{PROG}: error: {line}\n")
    sys.stderr.flush()


def unreadable(path: str) -> str | None:
    """Why `path` is not a script we can read (None when it is)."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory")
        if stat.S_ISREG(mode):  # FIFOs and devices are left to the runner: opening may block
            with open(path, "rb"):
                pass
    except OSError as exc:
        return f"cannot read {path!r}: {exc.strerror or exc}"
    return None
