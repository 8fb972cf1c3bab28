"""The zygote's pipe, declared once: a process that has imported the worker's libraries (browser-use, the model
client, the episode's modules) and forks a worker for each slot on request, so a worker starts in milliseconds
rather than paying seconds of imports each (bench/worker_start.py).

The executor asks on the zygote's stdin, a SOCK_SEQPACKET socket (one message a request, the worker's three file
descriptors alongside: its stdin, its stdout, its log): `Fork`, with the worker's whole environment. The zygote
answers on its stdout, one JSON line each: `ZygoteReady` once, when its imports are done; `Forked` or `ForkFailed`
for each request; `ChildExited` as each worker it forked ends (it is their parent: it alone can read their exit
codes). A worker forked is exactly a worker started: its own session and process group, its own environment
(nothing of the zygote's), the same protocol on its pipes."""

from __future__ import annotations

from dataclasses import dataclass

from om2w_tui.protocol.codec import Tagged

ZYGOTE_MODULE = "om2w_tui.episode.zygote"
REQUEST_BYTES = 1 << 20          # a request's message at most (the environment is a few kilobytes)
FDS_PER_FORK = 3                 # the worker's stdin, stdout and log, in that order


@dataclass(frozen=True)
class Fork:
    """Fork a worker with this environment (and the three descriptors sent alongside)."""
    id: int
    env: dict[str, str]


@dataclass(frozen=True)
class ZygoteReady:
    pid: int


@dataclass(frozen=True)
class Forked:
    id: int
    pid: int


@dataclass(frozen=True)
class ForkFailed:
    id: int
    error: str


@dataclass(frozen=True)
class ChildExited:
    """A worker the zygote forked has ended: its exit code as `subprocess` gives it (-N: killed by signal N)."""
    pid: int
    rc: int


Reply = ZygoteReady | Forked | ForkFailed | ChildExited
REQUESTS: Tagged[Fork] = Tagged("op", {"fork": Fork})
REPLIES: Tagged[Reply] = Tagged("re", {"ready": ZygoteReady, "forked": Forked, "failed": ForkFailed,
                                       "exited": ChildExited})
