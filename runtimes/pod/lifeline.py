"""Child processes that end when their parent does, however it ends.

A gateway killed with SIGKILL runs no clean-up code, so its pods must notice
on their own: Linux's parent-death signal delivers SIGTERM to a process the
moment the thread that forked it exits, and a SIGTERM'd pod drains and exits.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Get SIGTERM when process `parent` ends (Linux; elsewhere a no-op)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        # The parent was gone before the signal was armed: it will never come.
        os.kill(os.getpid(), signal.SIGTERM)
