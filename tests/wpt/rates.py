"""Per-directory WPT subtest pass rates of quickjail, Node and workerd on the same files.

Usage: ``python tests/wpt/rates.py [--no-workerd] [--by directory|folder|file] [--json OUT]
[DIRECTORY ...]`` (default: every claimed directory, one row each; ``$QUICKJAIL_CACHE_DIR`` holds
the tarball and the npm install).

Each runtime runs the very same program per file (``wpt_harness.program``: the prelude, WPT's
``testharness.js``, the file's helpers, the file, the reporter), each file in a fresh global:
- quickjail: a fresh sandbox per file (``wpt_harness.run_file``, as the suite does);
- Node (``node`` on PATH, 20 here): a fresh worker thread per file running the program with
  ``vm.runInThisContext``, as Node's own WPT runner does (``node_runner.js``);
- Node's own runner (``node-own-runner``): the tarball's ``test/wpt/test-*.js`` with its
  status files, read from its ``WPT_REPORT`` reports, for comparison with Node's CI;
- workerd: the pinned npm ``workerd`` (``workerd/package-lock.json``, ``npm ci`` into the cache),
  one ``workerd serve --experimental`` process per file, its Worker evaluating the program
  through the unsafe-eval binding inside a request (timers are refused at a Worker's top level).

A file's subtests are the union of the names any runtime reported; a runtime is credited with the
ones it passed, so a file that fails to load counts as all of them failing. Files that no runtime
could load count as one subtest each (``(harness)``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __name__ == "__main__":  # run as a script: the repo (release/), tests/ and this folder
    here = Path(__file__).resolve()
    sys.path[:0] = [str(here.parents[2]), str(here.parents[1]), str(here.parent)]

from node_jobs import run_node_jobs
from wpt_harness import (
    CLAIMED,
    HARNESS,
    FileResult,
    WptFile,
    backstop,
    discover,
    interpret,
    program,
    run_files,
)
from wpt_source import NODE_HARNESS_PREFIXES, node_tree, wpt_root

from quickjail.sandbox._engine import cache_dir

__all__ = ["main"]

HERE = Path(__file__).resolve().parent
WORKERD = HERE / "workerd"
_CONFIG = """using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w) ],
  sockets = [ (name = "http", address = "127.0.0.1:%d", http = (), service = "main") ],
);
const w :Workerd.Worker = (
  modules = [ (name = "main.js", esModule = embed "main.js") ],
  compatibilityDate = "2025-09-01",
  bindings = [ (name = "eval", unsafeEval = void) ],
);
"""


def _node(root: Path, files: list[WptFile], work: Path) -> list[FileResult]:
    answers = run_node_jobs([(f.id, program(root, f), backstop(f)) for f in files], work)
    out = []
    for file in files:
        answer = answers[file.id]
        seconds = answer.get("ms", 0) / 1000
        out.append(interpret(file, answer.get("value"), answer.get("error"), seconds))
    return out


def _node_own(root: Path, files: list[WptFile], work: Path) -> list[FileResult]:
    """Node's own WPT runner (the tarball's ``test/wpt/test-*.js``, its status files and
    ``test/common/wpt.js``) over the directories of ``files``, read from its ``WPT_REPORT``
    reports. Files it skips (its status files say why) or does not run count as failing."""
    node = shutil.which("node")
    if node is None:
        raise SystemExit("rates.py needs node on PATH")
    tree = node_tree(NODE_HARNESS_PREFIXES)
    wanted = {f.directory for f in files}
    reports: dict[str, tuple[str, list[dict[str, str]]]] = {}
    for script in sorted((tree / "test" / "wpt").glob("test-*.js")):
        m = re.search(r"WPTRunner\('([^']+)'", script.read_text(encoding="utf-8"))
        if m is None or not any(m.group(1).startswith(d) for d in wanted):
            continue
        out_dir = tree / "out" / "wpt"
        shutil.rmtree(out_dir, ignore_errors=True)
        out_dir.mkdir(parents=True)
        env = {**os.environ, "WPT_REPORT": "1"}
        subprocess.run([node, str(script)], cwd=tree, env=env, capture_output=True, timeout=1800)
        for report in out_dir.glob("report-*.json"):
            for entry in json.loads(report.read_text(encoding="utf-8"))["results"]:
                path, _, variant = entry["test"].lstrip("/").partition("?")
                run_id = re.sub(r"\.html$", ".js", path) + ("?" + variant if variant else "")
                reports[run_id] = (entry["status"], entry["subtests"])
    out = []
    for file in files:
        result = FileResult(file)
        if file.id not in reports:
            result.subtests[HARNESS] = ("FAIL", "not run by Node's runner (its status file)")
        else:
            status, subtests = reports[file.id]
            for sub in subtests:
                result.subtests[str(sub["name"])] = (str(sub["status"]), "")
            if status != "OK":
                result.subtests[HARNESS] = (str(status), "")
        out.append(result)
    return out


def _workerd_binary() -> Path:
    """The pinned workerd, ``npm ci``-installed into the cache once (keyed by the lockfile)."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("rates.py needs npm on PATH for workerd (or pass --no-workerd)")
    manifest = (WORKERD / "package.json").read_bytes()
    lock = (WORKERD / "package-lock.json").read_bytes()
    key = hashlib.sha256(manifest + b"\0" + lock).hexdigest()[:16]
    target = cache_dir() / f"wpt-workerd-{key}"
    binary = target / "node_modules" / "@cloudflare" / "workerd-linux-64" / "bin" / "workerd"
    if not (target / ".quickjail-installed").exists():
        staging = target.with_name(f"{target.name}.tmp{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        (staging / "package.json").write_bytes(manifest)
        (staging / "package-lock.json").write_bytes(lock)
        cmd = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
        subprocess.run(cmd, cwd=staging, check=True, capture_output=True, timeout=600)
        (staging / ".quickjail-installed").write_text(key)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    if not binary.exists():
        raise SystemExit(f"no workerd binary for this platform under {target}")
    return binary


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _workerd_one(binary: Path, root: Path, file: WptFile, work: Path) -> FileResult:
    started = time.monotonic()
    folder = Path(tempfile.mkdtemp(dir=work))
    shutil.copy(WORKERD / "main.js", folder / "main.js")
    port = _free_port()
    (folder / "config.capnp").write_text(_CONFIG % port)
    cmd = [str(binary), "serve", "--experimental", "config.capnp"]
    proc = subprocess.Popen(cmd, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    value, failure = None, None
    try:
        data = program(root, file).encode()
        for _ in range(200):  # the socket is up within a second or so
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
        request = urllib.request.Request(f"http://127.0.0.1:{port}/", data=data, method="POST")
        with urllib.request.urlopen(request, timeout=backstop(file)) as response:
            answer = json.loads(response.read())
        value, failure = answer.get("value"), answer.get("error")
    except Exception as e:  # the file's failure, whatever it is
        failure = f"workerd: {type(e).__name__}: {e}"
    finally:
        proc.kill()
        _, err = proc.communicate()
        if failure is not None and err:
            failure += " " + err.decode(errors="replace")[-300:]
        shutil.rmtree(folder, ignore_errors=True)
    return interpret(file, value, failure, time.monotonic() - started)


def _workerd(root: Path, files: list[WptFile], work: Path) -> list[FileResult]:
    binary = _workerd_binary()
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda f: _workerd_one(binary, root, f, work), files))


def _group(file: WptFile, by: str) -> str:
    if by == "directory":
        return file.directory
    if by == "folder":
        return file.path.rsplit("/", 1)[0]
    return file.id


def _rates(
    columns: dict[str, list[FileResult]], files: list[WptFile], by: str = "directory"
) -> dict[str, dict[str, tuple[int, int]]]:
    """Per group (claimed directory, folder or file) and runtime: (passed, total) over the
    union of subtest names."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for i, file in enumerate(files):
        names = set().union(*(set(c[i].subtests) - {HARNESS} for c in columns.values()))
        for runtime, results in columns.items():
            subtests = results[i].subtests
            if names:
                passed = sum(subtests.get(n, ("FAIL",))[0] == "PASS" for n in names)
                total = len(names)
            else:
                passed, total = int(HARNESS not in subtests), 1
            row = out.setdefault(_group(file, by), {})
            p, t = row.get(runtime, (0, 0))
            row[runtime] = (p + passed, t + total)
    return out


def main() -> None:
    """Print the table (and write it as JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("directories", nargs="*", default=list(CLAIMED))
    parser.add_argument("--no-workerd", action="store_true")
    parser.add_argument("--no-node-own-runner", action="store_true")
    parser.add_argument("--json", type=Path, help="write the table and each file's subtests")
    parser.add_argument(
        "--by", choices=("directory", "folder", "file"), default="directory", help="rows"
    )
    args = parser.parse_args()
    root = wpt_root()
    files = [f for d in args.directories for f in discover(root, d)[0]]
    runners: dict[str, Callable[[Path, list[WptFile], Path], list[FileResult]]] = {
        "quickjail": lambda r, f, _w: run_files(r, f),
        "node": _node,
        "node-own-runner": _node_own,
    }
    if args.no_node_own_runner:
        del runners["node-own-runner"]
    if not args.no_workerd:
        runners["workerd"] = _workerd
    columns: dict[str, list[FileResult]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, runner in runners.items():
            started = time.monotonic()
            columns[name] = runner(root, files, Path(tmp))
            took = time.monotonic() - started
            print(f"{name}: {len(files)} files in {took:.0f} s", file=sys.stderr)
    table = _rates(columns, files, args.by)
    width = max(len(d) for d in table) + 2
    print(f"{'directory':<{width}}" + "".join(f"{name:>22}" for name in columns))
    totals = {name: [0, 0] for name in columns}
    for directory, row in table.items():
        cells = ""
        for name in columns:
            p, t = row[name]
            totals[name][0] += p
            totals[name][1] += t
            cells += f"{p:>9}/{t:<6} {100 * p / t:5.1f}%"
        print(f"{directory:<{width}}{cells}")
    cells = "".join(f"{p:>9}/{t:<6} {100 * p / t:5.1f}%" for p, t in totals.values())
    print(f"{'total':<{width}}{cells}")
    if args.json:
        per_file = {
            name: {r.file.id: r.subtests for r in results} for name, results in columns.items()
        }
        data = {"table": {d: dict(r) for d, r in table.items()}, "files": per_file}
        args.json.write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
