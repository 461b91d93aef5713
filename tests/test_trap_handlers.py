"""A guest's trap stays an error of its run even when the process installed a fault handler
after quickjail's engine (Python's faulthandler, which ray.init() turns on): wasmtime's trap
handlers are put back for every new instance (sandbox/_signals.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# a run paused in a host call, resumed with memory forged under the key (a compromised guest):
# its wild loads trap out of bounds, which wasmtime's SIGSEGV handler turns into an error
_PROGRAM = """
import faulthandler, logging, os, sys
import quickjail
from quickjail import bridge
from quickjail.sandbox import _continuation

logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
KEY = b"k" * 32

def approve(n):
    raise bridge.Pause({"n": n})

paused = bridge.run_code_sync("export default await approve(1)", globals={"approve": approve})
faulthandler.enable()  # after the engine: it now takes SIGSEGV before wasmtime's handler
cont = paused.continuation
trapped = 0
for j in range(30):
    pages = list(cont.pages)
    k = j % len(pages)
    pages[k] = (pages[k][0], os.urandom(4096))
    forged = _continuation.Continuation(cont.build_id, cont.memory_size, pages, cont.state)
    out = quickjail.resume_sync(
        forged.seal(KEY), key=KEY, answers={paused.paused[0].call_id: 1},
        globals={"approve": approve}, timeout=1,
    )
    assert out.status in ("error", "terminated", "memory", "success"), out
    trapped += out.error is not None and "trapped" in out.error.message
print("trapped", trapped, flush=True)
"""


@pytest.mark.timeout(300)
def test_a_guest_trap_after_faulthandler_enable_ends_its_run_not_the_process(
    tmp_path: Path,
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_PROGRAM)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    trapped = int(proc.stdout.split()[-1])
    assert trapped > 0, proc.stdout  # the forged runs did trap, and the process went on
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("quickjail WARNING")]
    assert len(warnings) == 1 and "replaced wasmtime's trap handler" in warnings[0], proc.stderr
