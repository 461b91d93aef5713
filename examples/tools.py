"""A complete tool runtime example: the README's "Tools" section runs exactly this file."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
from pydantic import BaseModel

from quickjail import runtime
from quickjail.runtime import ToolResult, define_tool


class WeatherArgs(BaseModel):
    city: str


async def get_weather(state: runtime.ThreadState, args: WeatherArgs) -> ToolResult:
    forecast = {"Paris": "sunny", "Oslo": "snow"}.get(args.city, "unknown")
    return ToolResult(status="success", result={"city": args.city, "forecast": forecast})


async def summarize(state: runtime.ThreadState) -> ToolResult:
    # tools can run sandboxed code bound to their thread
    run = await state.run_code("export default [1, 2, 3].map((x) => x * x)")
    return ToolResult(status="success", result=run.result)


weather = define_tool(
    description="Weather forecast for a city.",
    args=WeatherArgs,
    execute=get_weather,
    name="get_weather",
)
squares = define_tool(
    description="Squares of 1..3, computed in the sandbox.", execute=summarize, name="squares"
)
# code mode: the model writes one program that calls the tools through `import ... "tools"`
code = runtime.code_mode_tool([weather], timeout=5)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "agent.db"
        async with runtime.Runtime(db, tools=[weather, squares, code], secret_key="k" * 32) as rt:
            thread = await rt.thread()
            # tool calls exactly as a model sends them (OpenAI Chat shape here)
            results = await thread.execute_tool_calls(
                [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "squares", "arguments": "{}"},
                    },
                    {
                        "id": "c3",
                        "type": "function",
                        "function": {
                            "name": "run_code",
                            "arguments": (
                                '{"code": "import { tools } from \\"tools\\";\\n'
                                "const [a, b] = await Promise.all(["
                                'tools.get_weather({city: \\"Paris\\"}),'
                                ' tools.get_weather({city: \\"Oslo\\"})]);\\n'
                                'export default [a.forecast, b.forecast]"}'
                            ),
                        },
                    },
                ]
            )
            for r in results:
                print(r.status, r.result)
            print(runtime.export_tools([weather], "openai-chat")[0]["function"]["name"])


if __name__ == "__main__":
    anyio.run(main)
