"""``bridge.Fetch`` through a thread's ``run_code``: globals reach it as they reach
``bridge.run_code``, and a thread secret given as a host header stays out of the result."""

from __future__ import annotations

import anyio
import pytest
from fetch_support import serving

from quickjail import bridge, runtime

pytestmark = pytest.mark.anyio


async def test_a_threads_run_code_takes_a_fetch_with_a_secret_header(rt: runtime.Runtime) -> None:
    state = (await rt.thread()).state
    await state.set_env("API_KEY", "key-0f1e2d3c4b5a", type="secret")
    key = await state.env("API_KEY")
    assert key is not None
    with serving() as server:
        cap = bridge.Fetch(
            allow=[f"127.0.0.1:{server.port}"], allow_private=True, headers={"X-Api-Key": key}
        )
        code = 'const r = await fetch(U + "/echo"); export default (await r.json()).headers'
        with anyio.fail_after(60):
            result = await state.run_code(
                code, globals={"fetch": cap, "U": server.url("")}, timeout=30
            )
        assert result.status == "success", result.error
        assert server.seen("/echo")[0]["headers"]["x-api-key"] == key
        # the server echoed the key in its body: the thread's redaction still hides it
        assert result.result["x-api-key"] == "[REDACTED]"
