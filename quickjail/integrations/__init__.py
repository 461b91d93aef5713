"""Agent-framework integrations: a ``run_code`` tool backed by the sandbox.

- :mod:`quickjail.integrations.pydantic_ai` — a pydantic-ai toolset
  (``pip install 'quickjail[pydantic-ai]'``).
- :mod:`quickjail.integrations.langchain` — a LangChain ``StructuredTool``
  (``pip install 'quickjail[langchain]'``).

Each module imports its framework only when a tool is built, so importing quickjail never
needs one. :class:`CodeRunner` is the framework-free core they share: it runs one call in a
fresh sandbox and returns a JSON-able answer.
"""

from quickjail.integrations._runner import CodeRunner

__all__ = ["CodeRunner"]
