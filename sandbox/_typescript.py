"""Position-preserving TypeScript type stripping.

QuickJS-ng runs JavaScript only, so TypeScript sources are turned into JavaScript before they
run. Instead of compiling, this module *erases*: it parses the source with tree-sitter's
TypeScript grammar and overwrites every type-only construct (annotations, interfaces, type
aliases, generics, ``as T``, ``x!``, ``declare``, overload signatures, modifiers, ...) with
spaces. Nothing is moved, so every line and column the JavaScript engine reports (syntax errors,
stack traces) points at the same spot in the user's TypeScript, with no source map.

Position rule: every removed character becomes exactly one space, except the line terminators
``\\n``, ``\\r``, U+2028 and U+2029, which are kept as they are. The output therefore has the
same length in code points as the input and the same characters on the same lines; a kept
character stays at the same line and code-point column. (QuickJS-ng itself reports 1-based
columns counted in UTF-8 *bytes* of the line it ran; to show a user column, count code points
in the same line of the *stripped* text, which equals the column in the TypeScript source.)

A handful of characters are not spaces, to keep the JavaScript meaning identical where plain
blanking would change it:

* A removed statement or class member starts with ``;`` (an empty statement), and a statement
  whose removed tail ends it (``let x: T`` with no ``;``) gets ``;`` where the tail begins, so
  the lines around it cannot join into different JavaScript by automatic semicolon insertion.
* An arrow function whose return type spans lines gets its ``)`` moved to the end of the type,
  because JavaScript forbids a line break between an arrow's parameters and ``=>``.
* ``return <T>`` / ``throw <T>`` with the operand on the next line becomes ``return 0,``, and
  an arrow function body ``<T>{...}`` becomes ``0||{...}`` (``{`` would open a block).

``enum`` and constructor parameter properties are turned into code, as Node's
``--experimental-transform-types`` does (:mod:`._typescript_generate`): there the output keeps
every line but not the length of the lines the construct is on. Other constructs that need code
generation (namespaces with values, ``import x = ...``, ``export =``), decorators and
``accessor`` fields (QuickJS-ng cannot run them) are refused with :class:`TypeScriptError`.
Syntax errors are not reported here: text that tree-sitter could not parse is left untouched
so that the JavaScript engine reports it. Type-only imports must be marked (``import type``,
``import { type T }``), as with TypeScript's ``verbatimModuleSyntax``: an unmarked import of a
type is kept and fails when the module links.

Where a line break ends a modifier or a type in TypeScript but tree-sitter reads on
(``abstract`` + line break + ``x = f()`` is a field named ``abstract`` and a field ``x``;
``o satisfies object`` + line break + ``[0]`` is two statements), erasing tree-sitter's reading
would drop code the reader sees, so such text is refused with :class:`TypeScriptError`.

Bounds: the source is untrusted and stripped before the run starts, so the stripping is
bounded in work, in time and in what it takes from other threads. Sources over
:data:`MAX_TYPESCRIPT_BYTES` are refused before parsing. The tree is walked once with a cursor
(:mod:`._typescript_walk`, with the grammar's tables in :mod:`._typescript_kinds`) and each
helper looks at a node's own children or at a byte span no other helper scans (never at a
node's parent or siblings, which tree-sitter finds by descending from the root each time);
every step is counted against a budget of :data:`WORK_PER_BYTE` steps per byte (a safety net
the linear walk stays far below); either limit ends as a :class:`TypeScriptError` naming it.
tree-sitter holds the GIL for its whole parse, most of it in one stretch at the end of the
input that no progress callback interrupts (about 7 us per byte on adversarial text such as
``f<T>(x,`` repeated: 3-4 s for 511 KiB on an idle machine, every other thread of the process
stalled). So only sources up to :data:`IN_PROCESS_BYTES` are stripped on the caller's
thread (tens of ms at worst); larger ones go to a helper process (:mod:`._typescript_process`)
that the caller waits for without holding the GIL. A run's ``timeout`` counts the stripping: at
the run's deadline the helper is killed and the run ends as a timeout, and the run's own
deadline is what remains of its timeout after stripping. Without a timeout, stripping stops
after :data:`~._typescript_process.HELPER_TIME_LIMIT` seconds as a :class:`TypeScriptError`.
"""

from __future__ import annotations

import threading
import time
from typing import Final

import tree_sitter

from quickjail.sandbox._typescript_error import StripTimeout, TypeScriptError, max_output_bytes
from quickjail.sandbox._typescript_kinds import LANGUAGE
from quickjail.sandbox._typescript_walk import Stripper

__all__ = [
    "IN_PROCESS_BYTES",
    "MAX_TYPESCRIPT_BYTES",
    "WORK_PER_BYTE",
    "StripTimeout",
    "TypeScriptError",
    "max_output_bytes",
    "strip_types",
]

MAX_TYPESCRIPT_BYTES: Final = 512 * 2**10
"""Largest TypeScript source (in UTF-8 bytes) that is stripped; larger ones are refused.

tree-sitter's parse alone takes up to about 7 us per byte on adversarial text (``f<T>(x,``), so
this keeps the worst case of one helper process's parse near four seconds (of a process that
the caller waits for without the GIL, and kills at the run's deadline). Plain JavaScript
(``language="javascript"``) is not stripped.
"""
WORK_PER_BYTE: Final = 16
"""Steps (tree nodes visited, helper steps) allowed per source byte before stripping stops."""
IN_PROCESS_BYTES: Final = 4 * 2**10
"""Largest source (in UTF-8 bytes) stripped on the caller's thread; larger ones in a helper process.

At this size the parse holds the GIL for tens of ms on adversarial text (17-48 ms measured on a
busy 2-core machine; about 2 ms for ordinary code), and a helper's round trip would cost more
than the stripping.
"""

_thread_state = threading.local()


def _parser() -> tree_sitter.Parser:
    """Returns this thread's parser (a tree-sitter Parser must not be shared by threads)."""
    parser: tree_sitter.Parser | None = getattr(_thread_state, "parser", None)
    if parser is None:
        parser = tree_sitter.Parser(LANGUAGE)
        _thread_state.parser = parser
    return parser


def strip_types(source: str, *, filename: str = "<run_code>", deadline: float | None = None) -> str:
    """Turns TypeScript into JavaScript by blanking its types, keeping every position.

    Args:
        source: TypeScript source text.
        filename: Name of the source, used in error messages.
        deadline: ``time.monotonic()`` time by which stripping must end (the run's deadline);
            None for none (the helper's :data:`~._typescript_process.HELPER_TIME_LIMIT`
            still applies).

    Returns:
        JavaScript of the same length in code points, with every kept character at its
        original line and column (see the module docstring for the exact rule); where
        ``enum`` or parameter properties generated code, of the same lines.

    Raises:
        TypeScriptError: The source uses a construct that needs code generation other than
            ``enum`` and parameter properties (a namespace with values, ``import x = ...``,
            ``export =``) or a decorator, what TypeScript rejects of those two, a line break
            ends a modifier or a type where tree-sitter reads on, or the source is over
            :data:`MAX_TYPESCRIPT_BYTES`, its work budget, the generated code's bound or the
            helper's time limit. Syntax errors are not raised: such text is
            left for the JavaScript engine to report.
        StripTimeout: The deadline passed before stripping ended.
    """
    data = _encode(source, filename)
    if deadline is not None and time.monotonic() >= deadline:
        raise StripTimeout
    if len(data) <= IN_PROCESS_BYTES:
        return _strip_encoded(source, data, filename)[0]
    from quickjail.sandbox import _typescript_process  # loaded by the first large source

    return _typescript_process.strip(source, data, filename, deadline)


def _encode(source: str, filename: str) -> bytes:
    """Returns the source as UTF-8; raises TypeScriptError if it is over the size limit."""
    # UTF-8 takes at least a byte per code point: a source too long in code points is refused
    # before it is encoded.
    data = source.encode("utf-8", "surrogatepass") if len(source) <= MAX_TYPESCRIPT_BYTES else b""
    if len(source) > MAX_TYPESCRIPT_BYTES or len(data) > MAX_TYPESCRIPT_BYTES:
        message = (
            f"the TypeScript source is over {MAX_TYPESCRIPT_BYTES} bytes "
            f"(MAX_TYPESCRIPT_BYTES, {MAX_TYPESCRIPT_BYTES // 2**10} KiB of UTF-8), the limit "
            'of type stripping; pass larger programs as JavaScript (language="javascript") or '
            "split them into modules"
        )
        raise TypeScriptError(message, line=1, column=1, filename=filename)
    return data


def _strip(source: str, filename: str) -> tuple[str, int]:
    """Strips `source` on this thread; returns the JavaScript and the steps it took (tests
    check the count; a helper process strips with this)."""
    return _strip_encoded(source, _encode(source, filename), filename)


def _strip_encoded(source: str, data: bytes, filename: str) -> tuple[str, int]:
    tree = _parser().parse(data)
    stripper = Stripper(data, filename, WORK_PER_BYTE)
    stripper.walk(tree.root_node)
    if not stripper.ranges and not stripper.edits:
        return source, stripper.visited + stripper.work
    output = stripper.render().decode("utf-8", "surrogatepass")
    return output, stripper.visited + stripper.work
