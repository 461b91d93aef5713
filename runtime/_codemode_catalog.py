"""Discovery in code mode: what a program (or an MCP client) can find and how it is declared.

A code-mode tool may reach hundreds of tools across sources: its own ``define_tool`` tools
(the ``tools`` namespace), connectors (one namespace each) and the thread's saved snippets
(``snippets``). Listing every declaration in the tool's description does not scale, so the
description names the namespaces, and ``search(query)`` (ranked by name, then description)
and ``describe(name)`` (the full TypeScript declaration) find the rest on demand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ._typescript_decl import is_export_name, ts_declaration, ts_module_declaration

if TYPE_CHECKING:
    from ._state import ThreadState
    from ._tool import Tool
    from .connectors import Connector

__all__ = ["MAX_DESCRIPTION", "Catalog", "Entry"]

#: What an MCP client accepts as a tool's description (and a model reads comfortably).
MAX_DESCRIPTION: Final = 4096
MAX_RESULTS: Final = 50
MAX_DESCRIBE: Final = 32_000  # characters of one describe() answer
_LINE: Final = 200  # characters of a description in a search result
_WORD_RE: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


@dataclass(frozen=True, slots=True)
class Entry:
    """One callable thing: ``name`` as a program writes it (``github.create_issue``)."""

    name: str
    description: str
    declaration: str

    def line(self) -> dict[str, str]:
        """The entry as a search result: its name and the first line of its description."""
        first = self.description.strip().split("\n", 1)[0]
        if len(first) > _LINE:
            first = first[: _LINE - 1] + "…"
        return {"name": self.name, "description": first}


def words(text: str) -> list[str]:
    """Lower-case words of a name or text (``createIssue`` and ``create_issue`` alike)."""
    return [w.lower() for w in _WORD_RE.findall(text)]


def namespace_declaration(namespace: str, tools: Sequence[Tool]) -> str:
    """Declare a connector's tools as ``declare namespace github { function ...; }``."""
    inner = "".join(ts_declaration(t, "  ", in_module=False) + "\n" for t in tools)
    inner = inner.replace("  declare function ", "  function ")
    return f"declare namespace {namespace} {{\n{inner}}}"


class Catalog:
    """The sources of one code-mode tool, and discovery over them."""

    def __init__(
        self,
        local: dict[str, Tool],
        connectors: Sequence[Connector],
        aliases: Sequence[str],
        snippets: bool,
    ) -> None:
        self.local = local
        self.connectors = {c.name: c for c in connectors}
        self.aliases = tuple(aliases)
        self.snippets = snippets

    def local_declaration(self, module: str) -> str:
        """The ``tools`` module and its globals, declared (every local tool)."""
        text = ts_module_declaration(list(self.local.values()), module)
        return text + "".join(
            f'\ndeclare const {n}: typeof import("{module}").tools;' for n in self.aliases
        )

    def namespaces(self) -> list[str]:
        """One line per namespace, for the code-mode tool's description."""
        lines = []
        if self.local:
            names = ", ".join(self.aliases)
            lines.append(f"- {names}: {len(self.local)} tools of this agent")
        for name, connector in self.connectors.items():
            about = connector.description.strip().split("\n", 1)[0][:_LINE]
            lines.append(f"- {name}: {about or 'a connected tool source'}")
        if self.snippets:
            lines.append("- snippets: programs saved earlier on this thread (save_snippet)")
        return lines

    async def entries(self, state: ThreadState | None) -> tuple[list[Entry], list[str]]:
        """Every entry, and the sources that could not be listed (with why)."""
        from ._snippets import list_snippets, snippet_declaration

        found: list[Entry] = []
        problems: list[str] = []
        alias = self.aliases[0]
        for tool in self.local.values():
            key = tool.name if is_export_name(tool.name) else json.dumps(tool.name)
            name = f"{alias}.{key}" if is_export_name(tool.name) else f"{alias}[{key}]"
            found.append(Entry(name, tool.description, ts_declaration(tool)))
        for namespace, connector in self.connectors.items():
            try:
                tools = await connector.tools()
            except Exception as exc:  # a source that is down must not hide the others
                problems.append(f"{namespace}: unavailable ({exc})"[: _LINE * 2])
                continue
            for tool in tools:
                declaration = namespace_declaration(namespace, [tool])
                found.append(Entry(f"{namespace}.{tool.name}", tool.description, declaration))
        if self.snippets and state is not None:
            for snippet in await list_snippets(state):
                found.append(
                    Entry(
                        f"snippets.{snippet.name}",
                        snippet.description,
                        snippet_declaration(snippet),
                    )
                )
        return found, problems

    async def search(self, state: ThreadState | None, query: Any, limit: Any = 10) -> Any:
        """Entries ranked against ``query``: a word matching a word of the name counts 3, a
        word inside the name 2, a word of the description 1; ties by name."""
        if not isinstance(query, str):
            raise TypeError("search(query) takes a string")
        if limit is None or not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            limit = 10
        limit = min(limit, MAX_RESULTS)
        entries, problems = await self.entries(state)
        wanted = words(query[:1000])[:32]
        scored = []
        for entry in entries:
            name = entry.name.lower()
            name_words = set(words(entry.name))
            text = entry.description.lower()
            score = 0
            for word in wanted:
                if word in name_words:
                    score += 3
                elif word in name:
                    score += 2
                elif word in text:
                    score += 1
            if score or not wanted:
                scored.append((-score, entry.name, entry))
        scored.sort(key=lambda item: (item[0], item[1]))
        results: list[dict[str, str]] = [e.line() for _, _, e in scored[:limit]]
        results.extend({"name": p.split(":", 1)[0], "description": p} for p in problems)
        return results

    async def describe(self, state: ThreadState | None, name: Any) -> str:
        """The TypeScript declaration of an entry, or of every entry of a namespace."""
        if not isinstance(name, str) or not name:
            raise TypeError("describe(name) takes a name such as 'tools.add' or 'github'")
        entries, problems = await self.entries(state)
        wanted = name.strip()
        if "." not in wanted and wanted in self.local:
            wanted = f"{self.aliases[0]}.{wanted}"
        for alias in self.aliases[1:]:
            if wanted.startswith(alias + "."):
                wanted = self.aliases[0] + wanted[len(alias) :]
        for entry in entries:
            if entry.name == wanted:
                return _cut(f"// {entry.name}\n{entry.declaration}")
        space = wanted.rstrip(".")
        if space in self.aliases:
            space = self.aliases[0]
        inside = [e for e in entries if e.name.startswith(space + ".")]
        if inside:
            return _cut("\n\n".join(f"// {e.name}\n{e.declaration}" for e in inside))
        down = [p for p in problems if p.startswith(space + ":")]
        if down:
            raise LookupError(down[0])
        raise LookupError(
            f"nothing is named {name[:200]!r}; search(query) finds tools by name and description"
        )


def _cut(text: str) -> str:
    if len(text) <= MAX_DESCRIBE:
        return text
    return text[: MAX_DESCRIBE - 80] + "\n// … cut: describe one tool by its full name for the rest"
