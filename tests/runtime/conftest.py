"""Fixtures for the runtime tests: both anyio backends and a real SQLite file per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from quickjail import runtime

SECRET_KEY = b"0123456789abcdef0123456789abcdef-test-key"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "agent.db"


@pytest.fixture
def open_runtime(db_path: Path) -> Callable[..., Any]:
    """Return ``make(**kwargs)``: an async context manager of a Runtime on ``db_path``."""

    def make(**kwargs: Any) -> runtime.Runtime:
        kwargs.setdefault("secret_key", SECRET_KEY)
        return runtime.Runtime(db_path, **kwargs)

    return make


@pytest.fixture
async def rt(open_runtime: Callable[..., runtime.Runtime]) -> AsyncIterator[runtime.Runtime]:
    async with open_runtime() as opened:
        yield opened
