"""A new process's first run imports only what it uses.

wasmtime-py's full bindings, the TypeScript stripper's tree-sitter, pydantic, cryptography,
psutil and anyio each cost milliseconds of a process's first run; a plain run needs none of
them (the sandbox declares the few wasmtime C functions it calls itself). Each check runs in a
fresh interpreter and reads ``sys.modules`` afterwards: facts, not timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(180)

OPTIONAL = ("wasmtime", "tree_sitter", "tree_sitter_typescript", "pydantic", "cryptography")
"""Top-level packages a plain JavaScript run must not import."""


def _loaded_after(code: str, cwd: Path) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; returns its ``out`` dict and the packages loaded."""
    script = textwrap.dedent(code) + textwrap.dedent(
        """
        import json, sys
        loaded = sorted({name.partition(".")[0] for name in sys.modules})
        print(json.dumps({"out": out, "loaded": loaded}))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert proc.returncode == 0, proc.stderr
    data: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return data


def test_a_javascript_run_imports_neither_wasmtime_py_nor_optional_features(
    tmp_path: Path,
) -> None:
    data = _loaded_after(
        """
        import quickjail
        from quickjail import sandbox
        a = sandbox.run_code_sync("export default 6 * 7", language="javascript")
        b = quickjail.run_code_sync(
            "export default await f(1)", language="javascript", imports={"m": {}},
            globals={"f": lambda x: x + 1},
        )
        c = sandbox.run_code_sync("while (true) {}", language="javascript", timeout=0.05)
        d = sandbox.run_code_sync("export default 1", language="javascript", fuel=10**6)
        out = [a.result, b.result, c.status, d.result]
        """,
        tmp_path,
    )
    assert data["out"] == [42, 2, "terminated", 1]
    loaded = data["loaded"]
    assert isinstance(loaded, list)
    assert not set(OPTIONAL) & set(loaded), loaded
    assert "anyio" not in loaded  # a sync run with sync callables needs no event loop
    assert "psutil" not in loaded


def test_a_typescript_run_loads_the_stripper_but_not_wasmtime_py(tmp_path: Path) -> None:
    data = _loaded_after(
        """
        from quickjail import sandbox
        out = [sandbox.run_code_sync("const n: number = 41; export default n + 1").result]
        """,
        tmp_path,
    )
    assert data["out"] == [42]
    loaded = data["loaded"]
    assert isinstance(loaded, list)
    assert "tree_sitter" in loaded  # the types had to be erased
    assert "wasmtime" not in loaded


def test_a_first_run_that_meets_no_date_or_bytes_imports_neither_datetime_nor_base64(
    tmp_path: Path,
) -> None:
    data = _loaded_after(
        """
        import quickjail
        out = [quickjail.run_code_sync("export default 1+1").result]
        """,
        tmp_path,
    )
    assert data["out"] == [2]
    loaded = data["loaded"]
    assert isinstance(loaded, list)
    assert "datetime" not in loaded  # imported only when a Date crosses
    assert "base64" not in loaded  # imported only when to_json_safe meets bytes


def test_dates_cross_both_ways_in_a_process_that_had_not_imported_datetime(
    tmp_path: Path,
) -> None:
    data = _loaded_after(
        """
        import sys
        import quickjail
        fresh = "datetime" not in sys.modules
        a = quickjail.run_code_sync(
            "export default [new Date(86400000), new Map([[new Date(0), 'epoch']]), "
            "new Set([new Date(1)]), new Date(NaN)]"
        )
        lenient = quickjail.run_code_sync("console.log(new Date(8.64e15))")
        import datetime
        b = quickjail.run_code_sync(
            "export default (d) => d.getTime()",
            execute={"fn": "default", "args": [datetime.datetime(1970, 1, 1, 0, 0, 1)]},
        )
        utc = datetime.timezone.utc
        out = [
            fresh,
            a.result == [
                datetime.datetime(1970, 1, 2, tzinfo=utc),
                {datetime.datetime(1970, 1, 1, tzinfo=utc): "epoch"},
                frozenset({datetime.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=utc)}),
                None,
            ],
            quickjail.to_json_safe(a.result)[:2],
            lenient.logs[0].args,
            b.result,
        ]
        """,
        tmp_path,
    )
    assert data["out"] == [
        True,
        True,
        ["1970-01-02T00:00:00+00:00", {"1970-01-01T00:00:00+00:00": "epoch"}],
        ["+275760-09-13T00:00:00.000Z"],
        1000,
    ]


def test_importing_the_runtime_does_not_load_cryptography(tmp_path: Path) -> None:
    data = _loaded_after("import quickjail.runtime\nout = None\n", tmp_path)
    loaded = data["loaded"]
    assert isinstance(loaded, list)
    assert "cryptography" not in loaded and "wasmtime" not in loaded
