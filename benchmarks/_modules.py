"""Module graph: a run of three TypeScript modules, cold (nothing cached) and warm.

The graph is ``entry → ./lib/a.ts → ./lib/b.ts`` (typed functions and an interface in each;
the entry exports a number). quickjail caches compiled bytecode per module keyed by the
module's name and source, so:

- **cold**: every sample gives all three modules a source no earlier run used (a comment and a
  constant carrying a counter), so neither the bytecode cache nor the TypeScript-stripping
  cache can help; each sample checks ``metrics.bytecode_hits == 0``;
- **warm**: the same three sources every time (after one priming run); each sample checks
  ``metrics.bytecode_hits > 0`` (3 is expected: the entry and both imports).

quickjs-rs loads the same graph through ``Runtime.set_module_loader`` (its ``.ts`` modules are
stripped by its own transform; the entry is evaluated with ``module=True`` and TypeScript
flags) in a fresh Runtime per sample; it caches nothing between runtimes, so its cold and warm
rows do the same work. Native quickjs-ng has ``Context.module`` but no module loader: any
``import`` of another source fails (``could not load module``), and it has no TypeScript.
"""

from __future__ import annotations

import itertools
import posixpath
from collections.abc import Callable
from typing import Any

from benchmarks._engines import NG, QUICKJAIL, RS, BenchFailure
from benchmarks._harness import Config
from benchmarks._report import Cell, Row, compare
from quickjail import bridge

__all__ = ["rows"]

RESULT = 17  # dot({1, 2}, {3, 4}) + area({w: 3, h: 2}) = 11 + 6

LIB_B = """export type Unit = "cm" | "in";
export interface Box { w: number; h: number; unit?: Unit }
export function area(b: Box): number { return b.w * b.h; }
export function twice(n: number): number { return area({ w: n, h: 2 }); }
"""

LIB_A = """import { twice, type Box } from "./b.ts";
export interface Pt { x: number; y: number }
export function dot(p: Pt, q: Pt): number { return p.x * q.x + p.y * q.y; }
export function score(p: Pt, q: Pt, box: Box): number { return dot(p, q) + twice(box.w); }
"""

ENTRY = """import { score, type Pt } from "./lib/a.ts";
interface Job { id: number; pts: [Pt, Pt] }
const job: Job = { id: 1, pts: [{ x: 1, y: 2 }, { x: 3, y: 4 }] };
export default score(job.pts[0], job.pts[1], { w: 3, h: 1 });
"""

_RS_RESULT = "globalThis.__result = score("


def _salted(tag: int | None) -> tuple[str, dict[str, str]]:
    """The entry and the modules; with a tag, every source is unique to that tag."""

    def salt(src: str) -> str:
        return src if tag is None else f"// run {tag}\n{src}export const salt_{tag} = {tag};\n"

    return salt(ENTRY), {"./lib/a.ts": salt(LIB_A), "./lib/b.ts": salt(LIB_B)}


def _quickjail(cold: bool, hits_seen: set[int]) -> Callable[[], Any]:

    counter = itertools.count()

    def run() -> Any:
        entry, modules = _salted(next(counter) if cold else None)
        res = bridge.run_code_sync(entry, modules=modules)
        if res.status != "success" or res.result != RESULT:
            raise BenchFailure(
                f"the graph ended {res.status!r} with {res.result!r} ({res.error or res.reason})"
            )
        hits = res.metrics.bytecode_hits
        hits_seen.add(hits)
        if cold and hits != 0:
            raise BenchFailure(f"a cold run hit the bytecode cache ({hits} hits)")
        if not cold and hits <= 0:
            raise BenchFailure("a warm run did not hit the bytecode cache (bytecode_hits 0)")
        return res.result

    return run


def _rs(cold: bool) -> Callable[[], Any]:
    import quickjs_rs

    flags = quickjs_rs.SourceTransform.SOURCE_TS | quickjs_rs.SourceTransform.STRIP_TYPESCRIPT
    counter = itertools.count()

    def normalize(base: str, spec: str) -> str:
        return posixpath.normpath(posixpath.join(posixpath.dirname(base), spec))

    def run() -> Any:
        entry, modules = _salted(next(counter) if cold else None)
        files = {posixpath.normpath(k[2:]): v for k, v in modules.items()}
        # a module evaluates to undefined: the entry leaves its value on a global instead
        entry = entry.replace("export default score(", _RS_RESULT)
        with quickjs_rs.Runtime() as rt:
            rt.set_module_loader(normalize=normalize, load=files.get)
            with rt.new_context(timeout=60) as ctx:
                ctx.eval(entry, module=True, filename="main.ts", transform_flags=flags)
                value = ctx.eval("globalThis.__result")
        if value != RESULT:
            raise BenchFailure(f"the graph returned {value!r}, expected {RESULT}")
        return value

    return run


def rows(cfg: Config, failures: list[str]) -> list[Row]:
    hits: dict[str, set[int]] = {"cold": set(), "warm": set()}
    # one untimed warm run first, so even a dry run's first warm sample can hit the cache
    try:
        _quickjail(False, set())()
    except Exception:  # the measure below reports it
        pass
    no_loader = Cell(error="no module loader", display="n/a (no module loader, no TS)")
    out: list[Row] = []
    for mode in ("cold", "warm"):
        cold = mode == "cold"
        runs: dict[str, Callable[[], Any]] = {QUICKJAIL: _quickjail(cold, hits[mode])}
        try:
            runs[RS] = _rs(cold)
        except ModuleNotFoundError:
            pass
        cells = compare(cfg, failures, f"modules_{mode}", runs)
        rs_cell = cells.get(RS) or Cell(error="not installed (quickjs_rs)")
        qj_cell = cells[QUICKJAIL]
        qj_cell.extra["bytecode_hits_seen"] = sorted(hits[mode])
        seen = ", ".join(map(str, sorted(hits[mode]))) or "?"
        if cold:
            note = (
                f"`run_code_sync(entry, modules={{'./lib/a.ts': …, './lib/b.ts': …}})`, "
                f"entry → a.ts → b.ts, typed functions and an interface each, returns "
                f"{RESULT}; every sample's three sources are unique (a comment and a "
                "constant with a counter), `bytecode_hits` checked 0. quickjs-rs: fresh "
                "Runtime + `set_module_loader` + `eval(module=True)` with its TS "
                "transform, same sources; native quickjs-ng: `Context.module` cannot "
                "import another source and strips no TypeScript."
            )
        else:
            note = (
                "the same graph with identical sources every sample (after one priming "
                f"run); `bytecode_hits` checked > 0 (seen: {seen}). quickjs-rs keeps no "
                "cache across runtimes, so its warm row does the cold row's work."
            )
        out.append(
            Row(
                f"modules_{mode}",
                f"3-module TypeScript graph, {mode}",
                "time",
                qj_cell,
                {NG: no_loader, RS: rs_cell},
                None,
                note=note,
            )
        )
    return out
