"""The Ray executor: a cluster (RAY_ADDRESS, an address, or a local one on the loopback
interface) and a per-item fan-out over actors.

Ray is imported only when an executor first connects, never when this module is imported.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import math
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from pytest_ragmetrics.errors import ConfigError, ExecutorError
from pytest_ragmetrics.values import non_negative, positive_int

T = TypeVar("T")
R = TypeVar("R")

INSTALL_HINT = "install it with pip install 'pytest-ragmetrics[ray]'"
# How long to wait for a cluster's head to accept a connection before saying it is unreachable.
CONNECT_TIMEOUT = 5.0

_lock = threading.Lock()


def import_ray() -> Any:
    """The ``ray`` module, or an ExecutorError saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ExecutorError(
            f"executor 'ray' needs Ray, which cannot be imported ({exc}); {INSTALL_HINT}"
        ) from None
    return ray


class RayExecutor:
    """Runs the heavy steps on a Ray cluster.

    ``address``: a cluster to join (``"host:6379"``, ``"ray://host:10001"``, ``"auto"``); without
    one, ``RAY_ADDRESS`` if set, else a new local cluster of ``num_cpus`` CPUs listening on
    127.0.0.1 only (no dashboard, no usage statistics), shut down by :meth:`close` or at exit.
    ``"local"`` always starts a local cluster. A process already connected to Ray (``ray.init``
    called by you) uses that connection.

    ``actors`` model-holding workers encode (default: as many as the cluster's CPUs, or GPUs when
    ``gpus_per_actor`` > 0, allow), each with ``cpus_per_actor`` CPUs and ``gpus_per_actor`` GPUs
    (fractions share a GPU). An actor runs torch on ``threads_per_actor`` threads (default: its
    CPUs); embeddings are bit-identical to a local run that uses as many threads (torch's kernels
    sum in another order for another thread count: about 1e-7 apart otherwise). ``shards`` splits
    an exact search over the cluster (default: the number of actors). ``concurrency`` is
    :meth:`map`'s default limit. ``runtime_env`` is passed to ``ray.init`` (e.g.
    ``{"py_modules": [...]}`` for nodes without this package installed).
    """

    kind = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        actors: int | None = None,
        cpus_per_actor: float = 1,
        gpus_per_actor: float = 0,
        threads_per_actor: int | None = None,
        shards: int | None = None,
        num_cpus: int | None = None,
        concurrency: int | None = None,
        runtime_env: Mapping[str, Any] | None = None,
    ) -> None:
        if address is not None and (not isinstance(address, str) or not address.strip()):
            raise ConfigError(
                "RayExecutor: address must be a Ray address such as '10.0.0.5:6379', "
                f"'ray://head:10001', 'auto' or 'local', got {address!r}"
            )
        self.address = address.strip() if address is not None else None
        if self.address not in (None, "auto", "local"):
            host_and_port(self.address)
        self.actors = None if actors is None else positive_int(actors, "RayExecutor: actors")
        self.cpus_per_actor = non_negative(cpus_per_actor, "RayExecutor: cpus_per_actor")
        self.gpus_per_actor = non_negative(gpus_per_actor, "RayExecutor: gpus_per_actor")
        if self.cpus_per_actor == 0 and self.gpus_per_actor == 0:
            raise ConfigError(
                "RayExecutor: an actor needs some CPU or GPU; cpus_per_actor and gpus_per_actor "
                "are both 0"
            )
        self.threads_per_actor = (
            max(1, int(self.cpus_per_actor))
            if threads_per_actor is None
            else positive_int(threads_per_actor, "RayExecutor: threads_per_actor")
        )
        self.shards = None if shards is None else positive_int(shards, "RayExecutor: shards")
        self.num_cpus = (
            None if num_cpus is None else positive_int(num_cpus, "RayExecutor: num_cpus")
        )
        self.concurrency = (
            None if concurrency is None else positive_int(concurrency, "RayExecutor: concurrency")
        )
        self.runtime_env = dict(runtime_env) if runtime_env is not None else None
        self._owned_temp_dir: str | None = None
        self._where = ""
        # Whether anything asked for the cluster (a cache hit never does).
        self.used = False
        self._loopback: tuple[str | None, Any] = (None, None)

    def __repr__(self) -> str:
        where = self.address or os.environ.get("RAY_ADDRESS") or "a local cluster"
        return f"RayExecutor({where!r}, actors={self.actors}, gpus_per_actor={self.gpus_per_actor})"

    # -- the cluster ----------------------------------------------------------------------

    @property
    def owns_cluster(self) -> bool:
        """Whether this executor started the cluster it uses (and so shuts it down)."""
        return self._owned_temp_dir is not None

    def connect(self) -> Any:
        """The ``ray`` module, connected: to this process's cluster, the address, RAY_ADDRESS,
        or a new local cluster."""
        self.used = True
        ray = import_ray()
        with _lock:
            if ray.is_initialized():
                return ray
            address = self.address if self.address is not None else os.environ.get("RAY_ADDRESS")
            if address is None or not address.strip() or address.strip() == "local":
                self._start_local(ray)
            else:
                self._join(ray, address.strip())
        return ray

    def _start_local(self, ray: Any) -> None:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        self._loopback = _loopback_only(True)
        # A folder of our own (short: Ray puts unix sockets in it), so that clusters of parallel
        # processes (xdist workers, other users) never share session files.
        base = "/tmp" if os.path.isdir("/tmp") else None
        temp_dir = tempfile.mkdtemp(prefix="ragray-", dir=base)
        cpus = self.num_cpus or os.cpu_count() or 1
        try:
            with _quiet_logger("ray._private.authentication"):
                ray.init(
                    address="local",
                    num_cpus=cpus,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                    runtime_env=self.runtime_env,
                    _node_ip_address="127.0.0.1",
                    _temp_dir=temp_dir,
                )
        except Exception as exc:
            shutil.rmtree(temp_dir, ignore_errors=True)
            _loopback_only(False, self._loopback)
            raise ExecutorError(
                f"could not start a local Ray cluster ({type(exc).__name__}: {exc}); set "
                "RAY_ADDRESS (or pass an address) to use a running cluster instead"
            ) from exc
        self._owned_temp_dir = temp_dir
        self._where = f"a local Ray cluster ({cpus} CPUs, 127.0.0.1)"
        atexit.register(self.close)

    def _join(self, ray: Any, address: str) -> None:
        check_reachable(address)
        try:
            ray.init(
                address=address,
                log_to_driver=False,
                configure_logging=False,
                runtime_env=self.runtime_env,
            )
        except Exception as exc:
            raise ExecutorError(
                f"could not join the Ray cluster at {address!r} ({type(exc).__name__}: {exc}); "
                "check RAY_ADDRESS or the address given, and that this machine runs the same "
                "Ray and Python versions as the cluster"
            ) from exc
        self._where = f"the Ray cluster at {address}"

    def close(self) -> None:
        """Shut down the local cluster this executor started (a joined cluster is left alone)."""
        temp_dir = self._owned_temp_dir
        if temp_dir is None:
            return
        self._owned_temp_dir = None
        try:
            import ray

            ray.shutdown()
        finally:
            shutil.rmtree(temp_dir, ignore_errors=True)
            atexit.unregister(self.close)
            # A later cluster in this process may be a remote one again.
            _loopback_only(False, self._loopback)

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def describe(self) -> str:
        """Where work runs, for messages: the cluster and its CPUs and GPUs."""
        ray = self.connect()
        resources = ray.cluster_resources()
        where = self._where or "the Ray cluster this process is connected to"
        return (
            f"{where}: {_count(resources.get('CPU', 0))} CPUs, "
            f"{_count(resources.get('GPU', 0))} GPUs"
        )

    # -- sizing ---------------------------------------------------------------------------

    def actor_count(self, wanted: int | None = None) -> int:
        """How many actors to start (``wanted`` or ``actors`` or what fits), checked against the
        cluster's CPUs and GPUs so that a request that cannot be met fails instead of waiting."""
        ray = self.connect()
        resources = ray.cluster_resources()
        cpus, gpus = float(resources.get("CPU", 0)), float(resources.get("GPU", 0))
        if self.gpus_per_actor > 0 and gpus < self.gpus_per_actor:
            raise ConfigError(
                f"RayExecutor: gpus_per_actor={_count(self.gpus_per_actor)} but the Ray cluster "
                f"has {_count(gpus)} GPUs; add GPU nodes or use gpus_per_actor=0"
            )
        fits = [math.floor(cpus / self.cpus_per_actor + 1e-9)] if self.cpus_per_actor else []
        if self.gpus_per_actor:
            fits.append(math.floor(gpus / self.gpus_per_actor + 1e-9))
        room = min(fits)
        count = wanted or self.actors or max(1, room)
        if count > room:
            need = f"{_count(self.cpus_per_actor)} CPUs"
            if self.gpus_per_actor:
                need += f" and {_count(self.gpus_per_actor)} GPUs"
            raise ConfigError(
                f"RayExecutor: {count} actors of {need} each do not fit the Ray cluster "
                f"({_count(cpus)} CPUs, {_count(gpus)} GPUs); ask for at most {room} actors"
            )
        return count

    def actor_options(self) -> dict[str, float]:
        """``num_cpus`` and ``num_gpus`` of one actor."""
        return {"num_cpus": self.cpus_per_actor, "num_gpus": self.gpus_per_actor}

    def shard_count(self) -> int:
        """Shards of an exact search: ``shards``, else one per actor."""
        return self.shards or self.actor_count()

    # -- fan-out --------------------------------------------------------------------------

    def map(
        self, function: Callable[[T], R], items: Sequence[T], *, concurrency: int | None = None
    ) -> list[R]:
        """``function`` over ``items`` on actors that each hold one copy of ``function``.

        At most ``concurrency`` calls are in flight (default: ``concurrency`` of the executor,
        else one per actor); beyond one per actor, an actor runs calls on threads. Results come
        in the order of ``items``; the first failing item's error is raised as it was raised.
        """
        items = list(items)
        if not items:
            return []
        ray = self.connect()
        limit = concurrency if concurrency is not None else self.concurrency
        limit = positive_int(limit, "concurrency") if limit is not None else self.actor_count()
        workers_wanted = min(limit, len(items), self.actors or self.actor_count())
        count = self.actor_count(workers_wanted)
        threads = math.ceil(limit / count)
        try:
            function_ref = ray.put(function)
        except Exception as exc:
            raise ExecutorError(
                f"cannot send {_name(function)} to Ray workers: it cannot be pickled "
                f"({type(exc).__name__}: {exc})"
            ) from None
        remote = ray.remote(max_concurrency=threads, **self.actor_options())(CallWorker)
        workers = [remote.remote(function_ref) for _ in range(count)]
        try:
            results, failures = _call_all(ray, workers, threads, function, items)
        finally:
            for worker_handle in workers:
                ray.kill(worker_handle)
        if failures:
            raise failures[min(failures)]
        return [results[i] for i in range(len(items))]


def _call_all(
    ray: Any, workers: list[Any], threads: int, function: Callable[..., Any], items: list[Any]
) -> tuple[dict[int, Any], dict[int, BaseException]]:
    """Every item's call on the ``workers``, at most ``threads`` in flight on each, the least
    busy worker first; no new call once one has failed. Results and failures by item index."""
    results: dict[int, Any] = {}
    failures: dict[int, BaseException] = {}
    pending: dict[Any, int] = {}  # object ref -> item
    owner: dict[Any, int] = {}  # object ref -> worker
    slots = [threads] * len(workers)
    next_item = 0
    while next_item < len(items) or pending:
        while next_item < len(items) and not failures and max(slots) > 0:
            worker = slots.index(max(slots))
            ref = workers[worker].call.remote(items[next_item])
            pending[ref] = next_item
            owner[ref] = worker
            slots[worker] -= 1
            next_item += 1
        if not pending:
            break
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            index = pending.pop(ref)
            slots[owner.pop(ref)] += 1
            try:
                results[index] = ray.get(ref)
            except Exception as exc:
                failures[index] = _cause(exc, function, index)
    return results, failures


class CallWorker:
    """A Ray actor holding one function (a judge, a pipeline) and calling it per item."""

    def __init__(self, function: Callable[[Any], Any]) -> None:
        self.function = function

    def call(self, item: Any) -> Any:
        return self.function(item)


def _cause(exc: Exception, function: Callable[..., Any], index: int) -> BaseException:
    """The exception the function raised on a worker, or an ExecutorError for a lost worker."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, Exception):
        return cause
    return ExecutorError(
        f"calling {_name(function)} on item {index} on Ray failed ({type(exc).__name__}: "
        f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else exc!r}); a worker may have "
        "run out of memory or lost its node"
    )


_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _loopback_only(
    on: bool, previous: tuple[str | None, Any] = (None, True)
) -> tuple[str | None, Any]:
    """Ray's single-machine mode, where every server binds 127.0.0.1 (set before its processes
    start; its driver-side switch too, in case Ray was imported earlier); off restores
    ``previous``. Returns what was there before."""
    try:
        ray_constants: Any = importlib.import_module("ray._private.ray_constants")
    except ImportError:  # pragma: no cover - private API moved
        ray_constants = None
    before = (os.environ.get(_LOOPBACK_ENV), getattr(ray_constants, "ENABLE_RAY_CLUSTER", None))
    env, switch = ("0", False) if on else previous
    if env is None:
        os.environ.pop(_LOOPBACK_ENV, None)
    else:
        os.environ[_LOOPBACK_ENV] = env
    if ray_constants is not None and switch is not None:
        ray_constants.ENABLE_RAY_CLUSTER = switch
    return before


@contextlib.contextmanager
def _quiet_logger(name: str) -> Iterator[None]:
    """Only errors from logger ``name`` meanwhile (Ray's notice that token authentication is on
    for a new local cluster is not for our users)."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _name(function: Callable[..., Any]) -> str:
    return getattr(function, "__qualname__", None) or type(function).__name__


def _count(value: float) -> str:
    return f"{value:g}"


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """An ExecutorError unless ``address`` (``host:port`` or ``ray://host:port``) accepts a TCP
    connection within ``timeout`` seconds (``"auto"`` is left to Ray)."""
    if address in ("auto", "local"):
        return
    host, port = host_and_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ExecutorError(
            f"cannot reach the Ray cluster at {address!r} ({reason}); check RAY_ADDRESS or the "
            "address given, that the head node runs (ray start --head), and that this machine "
            "may connect to it"
        ) from None


def host_and_port(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``host:port`` or ``ray://host:port``, else a ConfigError."""
    host, sep, port_text = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit():
        raise ConfigError(
            f"Ray address {address!r} is not host:port (e.g. 10.0.0.5:6379 or "
            "ray://head:10001), 'auto' or 'local'; check RAY_ADDRESS or the address given"
        )
    return host, int(port_text)
