"""The Ray executor: each slot is a Ray actor, placed anywhere in a cluster, that runs ONE worker process exactly as
the local executor does (`WorkerProcess`: `python -P -m om2w_tui.episode.worker`, JSON lines, its own process group
with its Chromium). The scheduler stays in the console process and sees the same worker surface as locally.

- Each actor asks `num_cpus` and one unit of the custom resource `browser`, so a node says how many browsers it
  holds (`ray start --resources '{"browser": 4}'`); actors are spread over the nodes.
- Events stream back as they happen: the driver calls the actor's `next_events` in a loop; each call returns as soon
  as the worker said something.
- `--out` on a shared filesystem (checked at start: a probe file written by the driver, read by the actor) is written
  in place. Otherwise the worker writes into a folder on its node and the actor ships every new or changed file with
  the events it belongs to (files first, as `ShippedFile`: a path relative to the task's folder), and the driver
  writes them under the folder of the task it handed the worker, atomically (never where a node says).
- The actor and the driver pass the worker protocol's typed commands and events (protocol/worker.py) as Ray call
  arguments and results; only the worker's pipe is JSON, through the protocol's codec.
- A node lost (or an actor that died) ends the worker's stream with `Exited(None)`: the scheduler then records an
  `infra` error from what reached `--out` and retries the episode elsewhere.

`ray` is imported only inside functions: the engine must start without it (it is an optional extra)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import socket
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from om2w_tui.executors.local import EXIT_TIMEOUT_S, WorkerDied, WorkerProcess, run_tag
from om2w_tui.files import read_file, write_atomic
from om2w_tui.json_input import LIMIT, InputError
from om2w_tui.protocol.worker import Command, Event, Exited, Finished, Run, WorkerLog
from om2w_tui.run_folder import RunFolder

RESOURCE = "browser"          # the custom resource a node advertises, one per browser it can hold
POLL_S = 2.0                  # an idle actor answers `next_events` this often (files written between events)
KILL_WAIT_S = 5.0             # after a kill, time for the worker's exit to come back before the actor is ended
PIP_HINT = "pip install 'om2w-tui[ray]'"
SHIP_ENV = "OM2W_RAY_SHIP"    # =1: ship the files back even when --out is shared (no probe file is written)
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"   # =0: Ray keeps a node (and a driver) on 127.0.0.1


def ray_missing(address: str | None = None) -> str:
    """'' when Ray can be imported (as `import_ray` does, for a driver of the cluster at `address`: auto, HOST:PORT,
    or RAY_ADDRESS when None); else the message for `--executor ray` (exit code 2)."""
    try:
        import_ray(address or os.environ.get("RAY_ADDRESS") or "auto")
    except ImportError:
        return f"--executor ray: Ray is not installed; install it with `{PIP_HINT}` (or `pip install 'ray>=2.60'`)"
    return ""


def check_address(address: str | None, timeout: float = 3.0) -> str:
    """'' when a Ray cluster may be at `address` (auto, HOST:PORT, or RAY_ADDRESS when None): a HOST:PORT must
    accept a connection (ray.init would retry for minutes); else the message for --ray-address (exit code 2)."""
    address = address or os.environ.get("RAY_ADDRESS") or "auto"
    if address == "auto" or "://" in address:
        return ""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return f"--ray-address {address}: auto or HOST:PORT (the head's GCS port, 6379 by default)"
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        return (f"--ray-address {address}: no Ray cluster answers there ({e.strerror or type(e).__name__}); start "
                f"one with `ray start --head --resources '{{\"browser\": 4}}'` or fix the address")
    return ""


@dataclass(frozen=True)
class ShippedFile:
    """A file of the running episode's folder on a node whose --out is not shared: its path relative to the task's
    folder, and its bytes."""
    path: str
    data: bytes


# ── on the node: the actor ────────────────────────────────
class ActorWorkerProcess(WorkerProcess):
    """The local worker, started through `sh`: Ray SIGKILLs an actor's direct children when the actor dies (its node
    lost, `ray.kill`), which would leave the worker's Chromium running, its group leader gone. With `sh` between, the
    shell is killed and the worker lives on long enough to see its stdin close and end its whole group (the orphan
    rule of episode/worker.py). `sh` leads the group, so `kill_group` still ends everything."""

    command = ("sh", "-c", '"$0" -P -m om2w_tui.episode.worker; exit $?', sys.executable)   # -P: python_module


class SlotActor:
    """One slot on some node: owns one WorkerProcess and, when `--out` is not shared, ships its files back."""

    def __init__(self, slot: int):
        self.slot = slot
        self.env: dict[str, str] = {}
        self.worker: WorkerProcess | None = None
        self.shared = True
        self.local_root: Path | None = None
        self.folder: Path | None = None         # this node's folder of the running episode (not shared)
        self.seen: dict[str, tuple[int, int]] = {}   # relative path -> (size, mtime_ns) already shipped

    async def start(self, out: str, probe: str, token: str, env: dict[str, str],
                    withhold: tuple[str, ...] = (), shard: str = "") -> dict[str, Any]:
        """Probe `out`, start the worker (with `env` over the node's own allowed variables: the run's tag)."""
        import ray  # in the actor's process, which Ray started: it is there

        self.env = env
        try:   # the run's own probe file: never through a symlink, never a FIFO
            self.shared = read_file(Path(out) / probe, 4096, own=True) == token.encode()
        except InputError:
            self.shared = False
        if self.shared:
            log = RunFolder(Path(out), shard).worker_log(self.slot)
        else:
            self.local_root = Path(tempfile.mkdtemp(prefix=f"om2w-ray-{self.env.get('OM2W_RUN_TAG', 'run')}-"))
            log = RunFolder(self.local_root).worker_log(self.slot)
        self.worker = ActorWorkerProcess(self.slot, log, self.env, withhold)
        await self.worker.start()
        return {"pid": self.worker.pid, "node": ray.get_runtime_context().get_node_id(), "shared": self.shared,
                "host": os.uname().nodename, "log": str(log)}

    async def send(self, cmd: Command) -> bool:
        if self.worker is None:
            return False
        if isinstance(cmd, Run) and not self.shared and self.local_root is not None:
            self._forget_folder()
            self.folder = self.local_root / "episode"
            shutil.rmtree(self.folder, ignore_errors=True)
            cmd = replace(cmd, spec=replace(cmd.spec, folder=str(self.folder)))
        return await self.worker.send(cmd)

    async def next_events(self, wait: float) -> list[Event | ShippedFile]:
        """The worker's events since the last call (waiting up to `wait` s for one), each preceded by the files
        written meanwhile."""
        assert self.worker is not None
        events: list[Event] = []
        with contextlib.suppress(TimeoutError):
            events.append(await asyncio.wait_for(self.worker.next_event(), wait))
            while not self.worker.events.empty():
                events.append(self.worker.events.get_nowait())
        files = await asyncio.to_thread(self._changed_files) if self.folder is not None else []
        if any(isinstance(e, Finished | Exited) for e in events):
            self._forget_folder()
        return [*files, *events]

    def _changed_files(self) -> list[ShippedFile]:
        folder = self.folder
        if folder is None or not folder.exists():
            return []
        out = []
        for p in sorted(folder.rglob("*")):
            rel = p.relative_to(folder)
            if any(part.startswith(".") for part in rel.parts) or not p.is_file():
                continue   # half-written files (write_atomic's temporaries) are shipped once they are renamed
            try:
                st = p.stat()
                key = (st.st_size, st.st_mtime_ns)
                if self.seen.get(str(rel)) == key:
                    continue
                data = read_file(p, LIMIT, own=True)   # an episode's own file: a symlink or a FIFO is not shipped
            except (OSError, InputError):
                continue
            self.seen[str(rel)] = key
            out.append(ShippedFile(str(rel), data))
        return out

    def _forget_folder(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        self.folder, self.seen = None, {}

    def kill_group(self) -> None:
        if self.worker is not None:
            self.worker.kill_group()

    async def close(self) -> None:
        if self.worker is not None:
            await self.worker.close()
        if self.local_root is not None:
            shutil.rmtree(self.local_root, ignore_errors=True)


# ── in the console: the driver's side ─────────────────────
def write_shipped(folder: Path, item: ShippedFile) -> bool:
    """A file shipped by an actor, written under `folder` (the task folder the driver handed the worker: never one a
    node names) atomically, its temporary beside the task folder's files, never inside trajectory/ (the evaluator
    reads every file there). A path that would leave the folder is refused: False."""
    rel = Path(item.path)
    if not item.path or rel.is_absolute() or ".." in rel.parts or any(p.startswith(".") for p in rel.parts):
        return False
    target = folder / rel
    if any((folder / Path(*rel.parts[:i])).is_symlink() for i in range(1, len(rel.parts) + 1)):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, item.data, tmp_dir=folder)
    return True


class RayWorker:
    """A slot's actor as the scheduler sees a worker: `next_event`, `send`, `kill_group`, `kill`, `close`."""

    def __init__(self, slot: int, actor: Any, info: dict[str, Any], executor: RayExecutor):
        self.slot = slot
        self.actor = actor
        self.info = info
        self.executor = executor
        self.events: asyncio.Queue[Event] = asyncio.Queue()
        self.exited = False
        self.killed = False
        self.folder: Path | None = None     # the driver's folder of the task it handed the worker last
        self._pump = asyncio.ensure_future(self._read())
        self._ended = False

    @property
    def pid(self) -> int | None:
        """The worker process's id on its node (`info["host"]`)."""
        pid = self.info.get("pid")
        return int(pid) if pid is not None else None

    @property
    def node(self) -> str:
        return str(self.info.get("node") or "")

    async def _read(self) -> None:
        import ray  # the driver is connected to the cluster already (RayExecutor)

        rc: int | None = None
        try:
            while True:
                try:
                    batch = await self.actor.next_events.remote(POLL_S)
                except ray.exceptions.ActorUnavailableError:   # a transient loss of the connection: ask again
                    await asyncio.sleep(0.5)
                    continue
                done = False
                for item in batch:
                    if isinstance(item, ShippedFile):
                        await self._write(item)
                    elif isinstance(item, Exited):
                        rc, done = item.rc, True
                    else:
                        self.events.put_nowait(item)
                if done:
                    break
        except ray.exceptions.RayError as e:   # the actor died, or its node was lost: the worker is gone
            rc = None
            self.events.put_nowait(WorkerLog("warning", f"lost its Ray actor ({type(e).__name__})"))
        except Exception as e:   # writing a shipped file failed: the worker cannot go on without its files
            rc = None
            self.events.put_nowait(WorkerLog("error", f"shipping files failed ({type(e).__name__}: {e})"))
            self.kill_group()
        finally:
            self.exited = True
            self.events.put_nowait(Exited(rc))
            self._end_actor()

    async def _write(self, item: ShippedFile) -> None:
        if self.folder is None or not await asyncio.to_thread(write_shipped, self.folder, item):
            self.events.put_nowait(WorkerLog("warning", f"a shipped file was refused: {item.path[:120]!r}"))

    def _end_actor(self) -> None:
        if self._ended:
            return
        self._ended = True
        self.executor.forget(self.actor)
        import ray  # the driver is connected to the cluster already (RayExecutor)

        with contextlib.suppress(Exception):
            ray.kill(self.actor)

    async def next_event(self) -> Event:
        return await self.events.get()

    async def send(self, cmd: Command) -> bool:
        """Send a command; False when the worker (or its actor) is gone."""
        if self.exited or self.killed:
            return False
        if isinstance(cmd, Run):
            self.folder = Path(cmd.spec.folder)
        try:
            return bool(await self.actor.send.remote(cmd))
        except Exception:   # the actor is gone (ray.exceptions.RayError)
            return False

    def kill_group(self) -> None:
        """End the worker's process group on its node now; the actor ends once the worker's exit came back."""
        if self.killed or self.exited:
            self.killed = True
            return
        self.killed = True
        ref = self.actor.kill_group.remote()
        loop = asyncio.get_running_loop()
        loop.call_later(KILL_WAIT_S, self._end_actor)   # a stuck actor is ended all the same
        del ref

    async def kill(self) -> None:
        self.kill_group()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._pump), KILL_WAIT_S)
        self._end_actor()

    async def close(self) -> None:
        """Ask the worker to exit (it stops an episode it runs, keeping its steps), ship its last files, end the
        actor; kill it all if it does not in time."""
        if not self.exited and not self.killed:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.actor.close.remote(), EXIT_TIMEOUT_S + KILL_WAIT_S)
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._pump), KILL_WAIT_S)
        if not self.exited:
            await self.kill()
        self._end_actor()


def on_loopback(address: str) -> bool:
    """Whether a cluster address is this machine's loopback (a one-machine cluster: its actors share this memory)."""
    host = address.rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def import_ray(address: str) -> Any:
    """Ray, imported for a driver of the cluster at `address`. On loopback (a one-machine cluster) Ray would rewrite
    127.0.0.1 into the machine's other address, which the head may not listen on (`ray.init` then retries for minutes):
    LOOPBACK_ENV=0 keeps the driver on 127.0.0.1, unless the user set it. Ray reads it when first imported, so a Ray
    imported before with the other setting is refused here rather than dialled out of loopback."""
    loopback = on_loopback(address)
    if loopback:
        os.environ.setdefault(LOOPBACK_ENV, "0")
    import ray  # asked for by --executor ray only: an optional extra
    from ray._private import ray_constants  # where Ray keeps what it read of LOOPBACK_ENV

    if loopback and os.environ[LOOPBACK_ENV] == "0" and getattr(ray_constants, "ENABLE_RAY_CLUSTER", False):
        raise RuntimeError(f"Ray was imported before {LOOPBACK_ENV}=0 was set: a driver of the loopback cluster "
                           f"{address} would leave 127.0.0.1; set it before anything imports ray")
    return ray


class RayExecutor:
    """Starts a Ray actor per slot in the cluster at `address` (auto, HOST:PORT, or RAY_ADDRESS when None)."""

    def __init__(self, out: Path, address: str | None = None, num_cpus: float = 1.0, withhold: tuple[str, ...] = (),
                 shard: str = ""):
        ray = import_ray(address or os.environ.get("RAY_ADDRESS") or "auto")
        self.out = Path(out)
        self.shard = shard   # the run's shard: its workers' logs are its own in a folder shards share
        self.num_cpus = num_cpus
        self.env = {"OM2W_RUN_TAG": run_tag(self.out)}
        self.withhold = withhold   # variables never passed on to a worker (the key's: it travels in the spec)
        self._owns_connection = False
        if not ray.is_initialized():
            address = address or os.environ.get("RAY_ADDRESS") or "auto"
            kwargs: dict[str, Any] = {"address": address, "log_to_driver": False,
                                      "logging_level": "WARNING", "configure_logging": False}
            if on_loopback(address):   # a one-machine cluster on loopback: the driver stays on loopback too
                kwargs["_node_ip_address"] = "127.0.0.1"
            ray.init(**kwargs)
            self._owns_connection = True
        self.address = address or "auto"
        self._cls: Any = ray.remote(SlotActor)
        self.actors: set[Any] = set()
        self.token = secrets.token_hex(16)
        self.probe = f".om2w-ray-probe-{self.token[:8]}"
        self.out.mkdir(parents=True, exist_ok=True)
        if os.environ.get(SHIP_ENV) != "1":   # without the probe, every actor finds --out not shared
            write_atomic(self.out / self.probe, self.token)
        self.workers: list[RayWorker] = []

    def browsers(self) -> int:
        """How many browsers the cluster's nodes advertise together (the `browser` resource)."""
        import ray  # connected in __init__

        api: Any = ray   # cluster_resources is untyped in Ray
        return int(api.cluster_resources().get(RESOURCE, 0))

    async def start_worker(self, slot: int) -> RayWorker:
        actor = self._cls.options(num_cpus=self.num_cpus, resources={RESOURCE: 1}, max_restarts=0,
                                  max_task_retries=0, scheduling_strategy="SPREAD").remote(slot)
        self.actors.add(actor)
        try:
            info = await actor.start.remote(str(self.out), self.probe, self.token, self.env, self.withhold,
                                            self.shard)
        except BaseException as e:
            self.forget(actor)
            import ray  # connected in __init__

            with contextlib.suppress(Exception):
                ray.kill(actor)
            if isinstance(e, Exception):
                raise WorkerDied(f"worker {slot} failed to start on the Ray cluster: {type(e).__name__}: "
                                 f"{str(e)[:500]}") from None
            raise
        w = RayWorker(slot, actor, info, self)
        self.workers.append(w)
        return w

    def forget(self, actor: Any) -> None:
        self.actors.discard(actor)

    def shutdown(self) -> None:
        """End every actor still alive, remove the probe file, and leave the cluster if this executor joined it."""
        import ray  # connected in __init__

        for actor in list(self.actors):
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self.actors.clear()
        (self.out / self.probe).unlink(missing_ok=True)
        if self._owns_connection and ray.is_initialized():
            ray.shutdown()
