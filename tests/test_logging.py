"""The ``quickjail`` logger: silent unless the application configures logging; a record for each
event an operator needs (a host function that raised, a refused call, the host failing, a pool
worker lost and replaced), naming the run's id; at most RECORDS_PER_RUN records a run."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import quickjail
from quickjail import bridge
from quickjail.executors import ProcessPool
from quickjail.sandbox._log import RECORDS_PER_RUN

GENEROUS = 60.0


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("quickjail")]


def _boom(n: int) -> int:
    raise ValueError(f"no {n}")


def test_a_host_function_that_raised_is_logged_with_the_run_id_and_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="quickjail")
    result = bridge.run_code_sync(
        "try { await boom(3) } catch (e) { report(e.message) }\nexport default 1",
        globals={"boom": _boom},
    )
    assert result.status == "success" and result.run_id
    [record] = _records(caplog)
    assert record.levelno == logging.WARNING
    assert record.getMessage() == f"run {result.run_id}: host function boom() raised ValueError"
    assert record.exc_info is not None and record.exc_info[1] is result.host_errors[0]


def test_a_refused_call_is_logged_as_a_warning_and_refused_arguments_as_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="quickjail")
    result = bridge.run_code_sync(
        "await f(1); try { await f(2) } catch (e) { report(e.name) }\nexport default 1",
        globals={"f": _int},
        quotas=bridge.Quotas(max_host_calls=1),
    )
    assert result.reports == ["RangeError"], result
    [record] = _records(caplog)
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith(f"run {result.run_id}: host call f() refused: ")

    caplog.clear()
    typed = bridge.run_code_sync(
        "try { await g('x') } catch (e) { report(e.name) }\nexport default 1",
        globals={"g": _int},
    )
    assert typed.status == "success" and len(typed.reports) == 1, typed
    [record] = _records(caplog)
    assert record.levelno == logging.INFO
    assert f"run {typed.run_id}: host call g() arguments refused: " in record.getMessage()


def _int(n: int) -> int:
    return n


def test_a_run_logs_at_most_its_share_of_records(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="quickjail")
    result = bridge.run_code_sync(
        "for (let i = 0; i < 200; i++) { try { await boom(i) } catch {} }\nexport default 1",
        globals={"boom": _boom},
    )
    assert result.status == "success"
    records = _records(caplog)
    assert len(records) == RECORDS_PER_RUN + 1
    assert (
        records[-1].getMessage() == f"run {result.run_id}: later records of this run are not logged"
    )


def test_each_run_has_its_own_id() -> None:
    ids = {quickjail.run_code_sync("export default 1").run_id for _ in range(20)}
    assert len(ids) == 20 and None not in ids


def test_a_pool_worker_lost_under_a_run_is_logged_with_its_run_and_its_replacement(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="quickjail")
    with ProcessPool(1) as pool:
        assert bridge.run_code_sync("export default 1", executor=pool).result == 1
        [victim] = pool.pids

        def die() -> int:
            os.kill(victim, signal.SIGKILL)
            return 1

        result = bridge.run_code_sync(
            "export default await die()", globals={"die": die}, executor=pool
        )
        assert result.reason == "worker_lost", result
        for _ in range(int(GENEROUS / 0.01)):
            if pool.pids and victim not in pool.pids:
                break
            threading.Event().wait(0.01)
        messages = [r.getMessage() for r in _records(caplog)]
    lost = [m for m in messages if m.startswith(f"run {result.run_id}: its worker was lost (")]
    assert len(lost) == 1 and "killed by SIGKILL" in lost[0], messages
    assert f"pool worker (pid {victim}) killed by SIGKILL: starting a new one" in messages


def test_quickjail_prints_nothing_when_the_application_configures_no_logging(
    tmp_path: Path,
) -> None:
    code = """
        import quickjail
        from quickjail import bridge
        def boom():
            raise ValueError("x")
        r = bridge.run_code_sync("try { await boom() } catch {}; await g()", globals={"boom": boom})
        print(r.status)
    """
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["error"]
    assert proc.stderr == ""


def test_version_is_the_installed_distributions() -> None:
    from importlib.metadata import version

    assert quickjail.__version__ == version("quickjail")
    assert "__version__" not in quickjail.__all__


def test_a_refused_continuation_is_logged_with_its_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from quickjail.sandbox.errors import ContinuationError

    def approve(n: int) -> int:
        raise bridge.Pause({"n": n})

    paused = bridge.run_code_sync("export default await approve(1)", globals={"approve": approve})
    assert paused.status == "paused" and paused.continuation is not None
    sealed = bytearray(paused.continuation.seal(b"k" * 32))
    sealed[-1] ^= 1
    caplog.set_level(logging.DEBUG, logger="quickjail")
    with pytest.raises(ContinuationError) as info:
        quickjail.resume_sync(
            bytes(sealed), key=b"k" * 32, answers={}, globals={"approve": approve}
        )
    [record] = _records(caplog)
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith(f"continuation refused ({info.value.reason}): ")
