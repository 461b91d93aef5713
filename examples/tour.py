"""The README's five-minute tour, as one program the test suite runs."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio

from quickjail import bridge


async def main() -> None:
    r = bridge.run_code_sync(
        """
      export default function main(n: number) {       // TypeScript is the default language
        return { squares: [...Array(n).keys()].map((i) => i * i), big: 2n ** 70n };
      }""",
        execute={"fn": "default", "args": [4]},
    )
    print(r.status, r.result)

    with tempfile.TemporaryDirectory() as root:
        Path(root, "notes.txt").write_text("hello")  # noqa: ASYNC240 - set-up, not the demo
        r = bridge.run_code_sync(
            'import { readFile } from "fs"; export default readFile("notes.txt", "utf8").length',
            imports={"fs": bridge.ReadOnlyDir(root)},
        )
        print(r.status, r.result)

    async def lookup(user_id: int) -> dict[str, Any]:
        await anyio.sleep(0.01)
        return {"id": user_id}

    r = await bridge.run_code(
        "export default await Promise.all([1, 2].map(lookup))", globals={"lookup": lookup}
    )
    print(r.status, r.result)

    run = bridge.run_code("for (let i = 0; ; i++) { report(i); await null }")
    async with anyio.create_task_group() as tg:
        tg.start_soon(run.wait)
        async for value in run.reports():
            if value == 3:
                run.terminate("seen enough")
    assert run.result is not None
    print(run.result.status, run.result.reason)


if __name__ == "__main__":
    anyio.run(main)
