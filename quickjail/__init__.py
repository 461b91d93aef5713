"""quickjail's command line: run a JS/TS file in the sandbox, or serve ``run_code`` over MCP.

``quickjail run FILE`` runs one program with the capabilities chosen by flags and prints its
result (``--json`` for one machine-readable object); ``quickjail mcp`` serves a ``run_code``
tool over stdio for MCP-capable agent hosts (needs the ``mcp`` extra). ``quickjail --help``
lists the flags and the exit codes.

The JSON conversion the CLI and the MCP server share is public, for other embedders:

    >>> from quickjail import to_json_safe
    >>> to_json_safe({"data": b"hi", "tags": frozenset({"b", "a"})})
    {'data': {'$bytes': 'aGk='}, 'tags': ['a', 'b']}
"""

from quickjail._cli import main, result_to_json, to_json_safe

__all__ = ["main", "result_to_json", "to_json_safe"]
