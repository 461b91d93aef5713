"""Record the expected values of the URL Pattern corpus by running it in workerd.

Usage: ``python tests/web/urlpattern_workerd.py`` (``$QUICKJAIL_CACHE_DIR`` holds the npm
install). Runs ``urlpattern_driver.js`` over the cases of ``urlpattern_cases.json`` in the
pinned workerd of ``tests/wpt/workerd`` (the one ``tests/wpt/rates.py`` uses) and rewrites each
case's ``expected`` and the file's ``workerd`` version. WPT's ``urlpatterntestdata.json`` is in
no registry package we found, so this corpus, written per section of the standard, stands in
for it; ``test_urlpattern.py`` runs the same driver in quickjail against these values.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "urlpattern_cases.json"
DRIVER = HERE / "urlpattern_driver.js"
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent / "wpt")]

from rates import _CONFIG, WORKERD, _free_port, _workerd_binary  # noqa: E402


def program(cases: list[dict[str, object]]) -> str:
    """The script that runs the driver over ``cases`` (without their expected values)."""
    bare = [{"pattern": c["pattern"], "inputs": c["inputs"]} for c in cases]
    return f"({DRIVER.read_text()})({json.dumps(bare)})"


def dump(data: dict[str, object]) -> str:
    """The corpus as JSON text with one case a line (small diffs when values are re-recorded)."""
    head = {k: v for k, v in data.items() if k != "cases"}
    cases = data["cases"]
    assert isinstance(cases, list)
    lines = ",\n".join(json.dumps(c, ensure_ascii=True) for c in cases)
    return f'{json.dumps(head, ensure_ascii=True)[:-1]}, "cases": [\n{lines}\n]}}\n'


def main() -> None:
    """Run the corpus in workerd and store what it gave as the expected values."""
    data = json.loads(CASES.read_text())
    binary = _workerd_binary()
    version = json.loads((WORKERD / "package.json").read_text())["dependencies"]["workerd"]
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "main.js").write_text((WORKERD / "main.js").read_text())
        port = _free_port()
        (work / "config.capnp").write_text(_CONFIG % port)
        cmd = [str(binary), "serve", "--experimental", "config.capnp"]
        proc = subprocess.Popen(cmd, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            time.sleep(1.5)
            body = program(data["cases"]).encode()
            request = urllib.request.Request(f"http://127.0.0.1:{port}/", data=body, method="POST")
            with urllib.request.urlopen(request, timeout=120) as response:
                answer = json.loads(response.read())
        finally:
            proc.kill()
            proc.communicate()
    if "error" in answer:
        raise SystemExit(f"workerd: {answer['error']}")
    for case, expected in zip(data["cases"], answer["value"], strict=True):
        case["expected"] = expected
    data["workerd"] = version
    CASES.write_text(dump(data))
    print(f"{len(data['cases'])} cases recorded with workerd {version}")


if __name__ == "__main__":
    main()
