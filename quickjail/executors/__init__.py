"""Where runs execute: ``run_code(..., executor=...)``; None (the default) is this process.

- :class:`ProcessPool` — N local worker processes (standard library only), each with the
  engine warm, one run at a time each. A worker that dies, hangs past its run's deadline or
  breaks the protocol ends only its own run and is replaced.
- :class:`RayExecutor` — Ray actors across a Ray cluster (the ``quickjail[ray]`` extra; Ray
  is imported only when one is made), each with the engine warm and ``concurrency`` runs at
  once; a dead actor ends its runs the same way and is replaced.

Whatever the executor, the handle is a :class:`~quickjail.sandbox.CodeExecution` with the same
semantics and the same :class:`~quickjail.sandbox.CodeResult`; host functions and the report
callback run in the caller's process and the worker calls them through its channel. A lost
worker is an outcome (``status == "error"``, ``reason == "worker_lost"``, ``error.name ==
"WorkerLost"``), not an exception. The exceptions::

    ExecutorError                  root of what an executor raises
    ├── ExecutorClosed             the executor was closed (new runs, runs still waiting)
    ├── QueueFull                  every worker is busy and max_queued runs wait already
    └── WorkerStartError           worker processes die before they are ready

    >>> from quickjail import bridge
    >>> from quickjail.executors import ProcessPool
    >>> with ProcessPool(workers=1) as pool:
    ...     bridge.run_code_sync("export default 6 * 7", executor=pool).result
    42
"""

from quickjail.executors._errors import ExecutorClosed, ExecutorError, QueueFull, WorkerStartError
from quickjail.executors._pool import ProcessPool
from quickjail.executors._ray import RayExecutor

__all__ = [
    "ExecutorClosed",
    "ExecutorError",
    "ProcessPool",
    "QueueFull",
    "RayExecutor",
    "WorkerStartError",
]

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("quickjail.executors._"):
        _obj.__module__ = __name__
del _name, _obj
