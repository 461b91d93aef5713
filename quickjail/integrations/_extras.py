"""Lazy imports of optional frameworks: a missing one fails naming the extra that installs it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["MissingExtraError", "needs_extra"]


class MissingExtraError(ModuleNotFoundError):
    """A feature's framework cannot be imported; the message says which extra installs it.

    Attributes:
        name: The module that could not be imported (as for ``ModuleNotFoundError``).
        package: The distribution the feature needs, e.g. ``"pydantic-ai"``.
        extra: The quickjail extra that installs it, e.g. ``"pydantic-ai"``.
    """

    def __init__(self, feature: str, package: str, extra: str, name: str | None) -> None:
        super().__init__(f"{feature} needs {package}: pip install 'quickjail[{extra}]'", name=name)
        self.package = package
        self.extra = extra


@contextlib.contextmanager
def needs_extra(feature: str, package: str, extra: str) -> Iterator[None]:
    """Turn a ``ModuleNotFoundError`` raised in the block into a :class:`MissingExtraError`.

    Wrap only the framework's imports::

        with needs_extra(__name__, "pydantic-ai", "pydantic-ai"):
            from pydantic_ai import Tool

    Args:
        feature: What needs the framework, e.g. ``"quickjail.integrations.pydantic_ai"``.
        package: The distribution to name, e.g. ``"pydantic-ai"``.
        extra: The quickjail extra (a key of ``[project.optional-dependencies]``).

    Raises:
        MissingExtraError: The block raised ``ModuleNotFoundError`` (chained as the cause).
    """
    try:
        yield
    except ModuleNotFoundError as exc:
        raise MissingExtraError(feature, package, extra, exc.name) from exc
