"""What pods and templates set on their own processes: dying with their parent, process
groups, and limits.

A pod forked by a template leads a session (and process group) of its own, which the
subprocesses its functions start join: the pod ends its group when it exits, the template
SIGKILLs what is left of it when it reaps the pod, and the gateway kills the whole group of
a pod it finds frozen. So a `sleep 1000` a function started does not outlive its pod.

A gateway killed with SIGKILL runs no clean-up code, so its pods must notice
on their own: Linux's parent-death signal delivers SIGTERM to a process the
moment the thread that forked it exits, and a SIGTERM'd pod drains and exits.

`apply_process_limits` runs in every pod (after the fork from a template, or at the start of
an exec'd or standalone pod), never in a template: a template's limit would be inherited by
every pod it forks, and the kernel's OOM killer should pick a pod before the template.

The memory limit is an address-space limit (RLIMIT_AS), which needs no privilege and no
cgroup: an allocation past it fails, so Python raises MemoryError inside the function that
asked, and the executor turns that into a `resource_exhausted` error for that call. It counts
what the process reserves, not what it touches, so two things keep the reservations small:
glibc gets at most `LIMITED_ARENAS` malloc arenas (by default it reserves a 64 MiB arena per
busy thread, up to eight per core), and the pod refuses to start under a limit it cannot
even idle in (`MemoryLimitTooLow`), instead of failing its first calls.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import resource
import signal
import sys

from toolmesh.protocol.defaults import POD_OOM_SCORE_ADJ

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


MIB = 1024 * 1024
#: glibc's mallopt() parameter that caps the number of malloc arenas.
_M_ARENA_MAX = -8
#: Malloc arenas in a pod with a memory limit. Measured here: 32 busy worker threads reserve
#: 2.4 GB of address space with glibc's default and 0.4 GB with two; Python allocates under
#: the GIL, so more arenas buy little.
LIMITED_ARENAS = 2
#: Address space a pod reserves while it starts serving, beyond what it holds before (the gRPC
#: server's threads, stacks and malloc arenas): measured at about 130 MiB, with room to spare.
SERVING_RESERVE = 192 * MIB
#: A thread's stack when RLIMIT_STACK does not say (it is unlimited).
_DEFAULT_STACK = 8 * MIB


class MemoryLimitTooLow(Exception):
    """max_memory_mb is below what the pod needs before it runs any call."""


def apply_process_limits(max_memory_mb: int | None, workers: int) -> None:
    """Raise this process's OOM score, and cap its address space at `max_memory_mb` MiB if set.

    Raises MemoryLimitTooLow, naming the figures, when the pod could not serve under the limit.
    """
    _raise_oom_score()
    if max_memory_mb is None:
        return
    _limit_malloc_arenas()
    limit = max_memory_mb * MIB
    needed = address_space() + SERVING_RESERVE + workers * thread_stack_bytes()
    if needed > limit:
        raise MemoryLimitTooLow(
            f"max_memory_mb = {max_memory_mb} is below what this pod needs before it runs a call: "
            f"about {needed // MIB} MiB of address space (its modules, gRPC and {workers} worker "
            "threads' stacks); raise max_memory_mb or lower workers"
        )
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    # Soft and hard alike, so user code cannot lift the limit it is held to.
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def address_space() -> int:
    """Bytes of address space this process has reserved now (VmSize)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def thread_stack_bytes() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    return _DEFAULT_STACK if soft == resource.RLIM_INFINITY else soft


def _raise_oom_score() -> None:
    # Raising one's own score needs no privilege; where /proc is missing or read-only the pod
    # still serves, only without the hint.
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as adj:
        adj.write(str(POD_OOM_SCORE_ADJ))


def _limit_malloc_arenas() -> None:
    # glibc only; another libc keeps its own policy.
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(_M_ARENA_MAX, LIMITED_ARENAS)


def lead_own_session() -> None:
    """Make this process the leader of a new session and process group (a pod forked by a
    template): whatever its functions start joins that group, so the group can be ended
    with it, and a terminal's Ctrl-C reaches the gateway only, which decides."""
    with contextlib.suppress(OSError):  # already a group leader: nothing to do
        os.setsid()


def end_own_group() -> None:
    """SIGTERM the rest of this process's group (the subprocesses its functions left behind),
    when this process leads it: never a group it merely belongs to, such as a shell's job.

    Survivors that ignore SIGTERM get SIGKILL from the template when it reaps the pod
    (template.py); a pod run on its own has only this."""
    if os.getsid(0) != os.getpid():
        return
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with contextlib.suppress(OSError):
            os.killpg(os.getpid(), signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)


def kill_group(leader: int) -> None:
    """SIGKILL the process group `leader` led (it may be gone; its group may outlive it)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGKILL)
