"""``quickjail mcp --connect/--openapi``: other tool sources behind one code-mode ``run_code``.

``--connect NAME='CMD ARGS'`` (an MCP server started over stdio) and ``--connect NAME=URL``
(one reached over streamable HTTP) and ``--openapi NAME=SPEC --base-url NAME=URL`` (an HTTP
API described by an OpenAPI document, with ``--auth NAME=...`` taking its secret from this
process's environment) each become a namespace of the one code-mode tool the server serves,
``run_code``, beside ``search``, ``describe`` and ``save_snippet`` (and the ``--tools``
module's own tools). The runtime holding them starts each source on first use and closes it
when the server stops.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from quickjail.runtime import Tool
    from quickjail.runtime.connectors import Connector
    from quickjail.sandbox.host import Executor

__all__ = ["SourceSpec", "build_connectors", "code_mode_over", "parse_sources", "secret_env"]


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """One ``--connect`` or ``--openapi`` source, checked but not started.

    Attributes:
        name: Its namespace in programs.
        kind: ``"mcp"`` or ``"openapi"``.
        command: The MCP server's argv (``--connect NAME='CMD ARGS'``).
        url: The MCP server's streamable-HTTP URL (``--connect NAME=URL``).
        spec: The OpenAPI document's path.
        base_url: The OpenAPI service's base URL (``--base-url NAME=URL``).
        auth: ``("bearer", VAR)``, ``("header", NAME, VAR)`` or ``("query", NAME, VAR)``.
    """

    name: str
    kind: Literal["mcp", "openapi"]
    command: tuple[str, ...] = ()
    url: str | None = None
    spec: str | None = None
    base_url: str | None = None
    auth: tuple[str, ...] = ()


def _pairs(values: Sequence[str], flag: str) -> list[tuple[str, str]]:
    out = []
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            raise ValueError(f"{flag} takes NAME=VALUE, not {value!r}")
        out.append((name, rest))
    return out


def parse_sources(
    connect: Sequence[str] = (),
    openapi: Sequence[str] = (),
    base_urls: Sequence[str] = (),
    auth: Sequence[str] = (),
) -> tuple[SourceSpec, ...]:
    """Check the flags and pair them up by name.

    Raises:
        ValueError: A flag is not ``NAME=VALUE``, a name is given twice, an ``--openapi``
            source has no ``--base-url`` (or a ``--base-url``/``--auth`` names no
            ``--openapi`` source), a command does not split as a shell would, or an
            ``--auth`` is not ``bearer:VAR``, ``header:NAME:VAR`` or ``query:NAME:VAR``.
    """
    specs: dict[str, SourceSpec] = {}
    for name, value in _pairs(connect, "--connect"):
        if name in specs:
            raise ValueError(f"the source name {name!r} is given twice")
        if value.startswith(("http://", "https://")):
            specs[name] = SourceSpec(name, "mcp", url=value)
            continue
        try:
            argv = tuple(shlex.split(value))
        except ValueError as exc:
            raise ValueError(
                f"--connect {name}: {value!r} does not split into a command: {exc}"
            ) from None
        if not argv:
            raise ValueError(f"--connect {name}: give a command or an http(s) URL")
        specs[name] = SourceSpec(name, "mcp", command=argv)
    bases = dict(_pairs(base_urls, "--base-url"))
    auths = dict(_pairs(auth, "--auth"))
    for name, value in _pairs(openapi, "--openapi"):
        if name in specs:
            raise ValueError(f"the source name {name!r} is given twice")
        base = bases.pop(name, None)
        if base is None:
            raise ValueError(f"--openapi {name}: give its service's URL with --base-url {name}=URL")
        specs[name] = SourceSpec(
            name, "openapi", spec=value, base_url=base, auth=_auth(name, auths.pop(name, None))
        )
    for flag, left in (("--base-url", bases), ("--auth", auths)):
        if left:
            raise ValueError(f"{flag} {', '.join(left)}: no --openapi source has that name")
    return tuple(specs.values())


def _auth(name: str, value: str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    parts = tuple(value.split(":"))
    if (parts[0] == "bearer" and len(parts) == 2) or (
        parts[0] in ("header", "query") and len(parts) == 3
    ):
        if all(parts):
            return parts
    raise ValueError(
        f"--auth {name}={value!r}: give bearer:VAR, header:NAME:VAR or query:NAME:VAR "
        "(VAR: an environment variable of this process holding the secret)"
    )


def build_connectors(specs: Sequence[SourceSpec]) -> list[Connector]:
    """The connectors of ``specs`` (nothing is started: each starts on first use).

    Raises:
        quickjail.runtime.errors.ToolDefinitionError: A name is no identifier, or an
            OpenAPI document cannot be read or is refused.
    """
    from quickjail.runtime import connectors

    made: list[Connector] = []
    for spec in specs:
        if spec.kind == "mcp":
            if spec.url is not None:
                made.append(connectors.mcp(spec.name, url=spec.url))
            else:
                made.append(connectors.mcp(spec.name, command=list(spec.command)))
            continue
        assert spec.spec is not None and spec.base_url is not None
        made.append(
            connectors.openapi(
                spec.name, spec.spec, base_url=spec.base_url, auth=_api_auth(spec.auth)
            )
        )
    return made


def _api_auth(auth: tuple[str, ...]) -> Any:
    from quickjail.runtime import connectors

    if not auth:
        return None
    if auth[0] == "bearer":
        return connectors.bearer(auth[1])
    if auth[0] == "header":
        return connectors.api_key(auth[2], header=auth[1])
    return connectors.api_key(auth[2], query=auth[1])


def secret_env(
    specs: Sequence[SourceSpec], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The ``--auth`` variables' values, read from this process's environment.

    Raises:
        ValueError: One of them is not set.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, str] = {}
    for spec in specs:
        if spec.auth:
            variable = spec.auth[-1]
            value = environ.get(variable)
            if not value:
                raise ValueError(
                    f"--auth {spec.name}: the environment variable {variable} is not set"
                )
            values[variable] = value
    return values


def code_mode_over(
    local: Sequence[Tool],
    sources: Sequence[Connector],
    *,
    timeout: float,
    memory_limit_bytes: int,
    executor: Executor | None,
) -> list[Tool]:
    """``run_code`` over the local tools and the sources, with ``search``, ``describe`` and
    ``save_snippet``."""
    from quickjail.runtime import code_mode_tool
    from quickjail.runtime.helpers import discovery_tools

    code = code_mode_tool(
        [*local, *sources],
        timeout=timeout,
        memory_limit_bytes=memory_limit_bytes,
        executor=executor,
    )
    return [code, *discovery_tools(code)]
