"""A short tour of run_code: a result, console logs and live reports as they arrive."""

from __future__ import annotations

import anyio

from quickjail import bridge

PROGRAM = """
export default async function main(name) {
  console.log(`hello from the sandbox, ${name}`);
  let total = 0;
  for (let step = 1; step <= 3; step++) {
    total += step * step;
    report({ step, total });          // arrives on the host while the run goes on
    await Promise.resolve();
  }
  return { total, squares: [1, 4, 9], when: new Date(0), big: 2n ** 64n };
}
"""


async def main() -> None:
    def on_report(value: object) -> None:
        print(f"  report  -> {value}")

    print("running a JavaScript module in a fresh WebAssembly sandbox…")
    run = bridge.run_code(
        PROGRAM,
        execute={"fn": "default", "args": ["demo"]},
        report=on_report,
        timeout=5,
    )
    result = await run
    for entry in result.logs:
        print(f"  console.{entry.level}: {' '.join(map(str, entry.args))}")
    print(f"  status  -> {result.status}")
    print(f"  result  -> {result.result}")
    print(f"  took    -> {result.duration_ms:.2f} ms")

    stopped = await bridge.run_code("while (true) {}", timeout=0.1)
    print(f"an endless loop with a 100 ms timeout -> {stopped.status} ({stopped.reason})")

    bomb = await bridge.run_code(
        "const a = []; while (true) a.push(new Array(1e5).fill(1));",
        memory_limit_bytes=32 * 2**20,
    )
    print(f"a runaway allocation under a 32 MiB cap -> {bomb.status}")


if __name__ == "__main__":
    anyio.run(main)
