"""A guest's trap stays an error of its run whatever fault handler the process installs later.

wasmtime turns a guest's out-of-bounds access into a trap of its run with the SIGSEGV handler
it installs with the engine; a handler installed after it (``faulthandler.enable()``, Ray's)
used to see the fault first and end the process. The host now guards the trap signals
(sandbox/_signals.py): faults in guest code go to wasmtime, all others to the later handler,
which still reports a real crash. Each case runs in a fresh process: a fault handler must be
installed after this process's first engine, and the crash case ends its process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# a run paused in a host call, resumed with memory forged under the key (as a compromised
# guest may write it): its wild loads trap out of bounds, in guest code
_FORGED_RESUMES = """
import faulthandler, logging, os, random, sys
import quickjail
from quickjail import bridge
from quickjail.sandbox import _continuation

logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
KEY = b"k" * 32

def approve(n):
    raise bridge.Pause({"n": n})

paused = bridge.run_code_sync("export default await approve(1)", globals={"approve": approve})
INSTALL_LATER
cont = paused.continuation
random.seed(7)
trapped = 0
for j in range(40):
    pages = list(cont.pages)
    k = j % len(pages)
    pages[k] = (pages[k][0], random.randbytes(4096))
    forged = _continuation.Continuation(cont.build_id, cont.memory_size, pages, cont.state)
    out = quickjail.resume_sync(
        forged.seal(KEY), key=KEY, answers={paused.paused[0].call_id: 1},
        globals={"approve": approve}, timeout=5,
    )
    assert out.status in ("error", "terminated", "memory", "success"), out
    trapped += out.error is not None and "trapped" in out.error.message
print("trapped", trapped, flush=True)
"""

_LATER = {
    "faulthandler": "faulthandler.enable()",
    "a plain handler": "import signal; signal.signal(signal.SIGSEGV, lambda *a: os._exit(99))",
}


def _run(program: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=280,
    )


@pytest.mark.timeout(300)
@pytest.mark.parametrize("later", sorted(_LATER))
def test_a_guest_trap_after_a_later_fault_handler_ends_its_run_not_the_process(
    later: str, tmp_path: Path
) -> None:
    proc = _run(_FORGED_RESUMES.replace("INSTALL_LATER", _LATER[later]), tmp_path)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    trapped = int(proc.stdout.split()[-1])
    assert trapped > 0, proc.stdout  # the forged runs did trap in guest code, and went on
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("quickjail WARNING")]
    assert len(warnings) == 1 and "guarded" in warnings[0], proc.stderr


def test_a_fault_outside_guest_code_still_reaches_the_later_handler(tmp_path: Path) -> None:
    proc = _run(
        """
        import ctypes, faulthandler
        import quickjail
        quickjail.run_code_sync("export default 1")
        faulthandler.enable()
        quickjail.run_code_sync("export default 2")  # the guard goes on top here
        ctypes.string_at(0)  # a host crash: faulthandler reports it, the process ends
        """,
        tmp_path,
    )
    assert proc.returncode == -11, proc.stderr[-3000:]
    assert "Fatal Python error: Segmentation fault" in proc.stderr, proc.stderr[-3000:]
