"""Row 8: the seven compute kernels on each engine, and the geometric mean of the ratios.

Every engine does the same unit of work per sample: a fresh sandbox or context, parse and run
the kernel, the checksum back in Python. The checksums must agree across engines; a mismatch
is reported as a failure (it means an engine computed something else).
"""

from __future__ import annotations

from typing import Any

from benchmarks._engines import NG, QUICKJAIL, RS, ng_eval, qj, rs_eval
from benchmarks._harness import Config
from benchmarks._kernels import KERNELS, Kernel, module_source, script_source
from benchmarks._report import Cell, Row, Target, compare, geomean

__all__ = ["rows"]


def _checksum(_key: str, value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _kernel_row(cfg: Config, kernel: Kernel, failures: list[str]) -> Row:
    n = kernel.dry_size if cfg.dry else kernel.size
    module, script = module_source(kernel, n), script_source(kernel, n)
    label = f"compute/{kernel.name}"
    cells = compare(
        cfg,
        failures,
        label,
        {
            QUICKJAIL: lambda: qj(module),
            NG: lambda: ng_eval(script),
            RS: lambda: rs_eval(script),
        },
        _checksum,
    )
    sums = {k: c.extra["checked"] for k, c in cells.items() if "checked" in c.extra}
    note = ""
    if len({repr(v) for v in sums.values()}) > 1:
        note = "CHECKSUM MISMATCH: " + ", ".join(f"{k}={v!r}" for k, v in sums.items())
        failures.append(f"{label}: {note}")
    return Row(
        f"compute_{kernel.name}",
        f"compute: {kernel.name} (n={n:,})",
        "time",
        cells[QUICKJAIL],
        {NG: cells[NG], RS: cells[RS]},
        None,
        note=note,
    )


def rows(cfg: Config, failures: list[str]) -> list[Row]:
    kernel_rows = [_kernel_row(cfg, k, failures) for k in KERNELS]

    def geo(engine: str) -> Cell:
        ratios = []
        for row in kernel_rows:
            cell = row.quickjail if engine == QUICKJAIL else row.peers[engine]
            base = row.peers[NG]
            if not (cell.ok and base.ok):
                return Cell(error="a kernel is missing")
            assert cell.value is not None and base.value is not None
            ratios.append(cell.value / base.value)
        return Cell(geomean(ratios), extra={"ratios": ratios})

    summary = Row(
        "compute_geomean",
        "compute, geomean of 7 kernels, ratio to native quickjs-ng",
        "factor",
        geo(QUICKJAIL),
        {NG: geo(NG), RS: geo(RS)},
        Target("<=", 1.35, "≤ 1.35×"),
        ratios=False,
        note="each column is that engine's geometric mean of per-kernel time ratios to "
        "native quickjs-ng (fresh context + eval per sample, engines timed in turn, "
        "checksums checked equal).",
    )
    return [*kernel_rows, summary]
