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

Constructs that need code generation (``enum``, namespaces with values, constructor parameter
properties, ``import x = ...``, ``export =``), decorators and ``accessor`` fields (QuickJS-ng
cannot run them) are refused with :class:`TypeScriptError`. Syntax errors are not reported
here: text that tree-sitter could not parse is left untouched so that the JavaScript engine
reports it. Type-only imports must be marked (``import type``, ``import { type T }``), as with
TypeScript's ``verbatimModuleSyntax``: an unmarked import of a type is kept and fails when the
module links.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Final

import tree_sitter
import tree_sitter_typescript

__all__ = ["TypeScriptError", "strip_types"]


class TypeScriptError(Exception):
    """A TypeScript construct that cannot be turned into JavaScript by erasing types.

    Attributes:
        message: What is not supported, and what to write instead.
        line: 1-based line of the construct's start in the source (lines end at ``\\n``).
        column: 1-based column of the construct's start, in code points of that line.
        filename: The name the source was given, for display.
    """

    message: str
    line: int
    column: int
    filename: str

    def __init__(
        self, message: str, *, line: int, column: int, filename: str = "<run_code>"
    ) -> None:
        super().__init__(f"{filename}:{line}:{column}: {message}")
        self.message = message
        self.line = line
        self.column = column
        self.filename = filename


_LANGUAGE: Final = tree_sitter.Language(tree_sitter_typescript.language_typescript())
_thread_state = threading.local()


def _parser() -> tree_sitter.Parser:
    """Returns this thread's parser (a tree-sitter Parser must not be shared by threads)."""
    parser: tree_sitter.Parser | None = getattr(_thread_state, "parser", None)
    if parser is None:
        parser = tree_sitter.Parser(_LANGUAGE)
        _thread_state.parser = parser
    return parser


# What the tree walk does on meeting a node of a kind (by kind id); kinds not listed are
# descended into and left as they are.
_SKIP = 1  # leave as is, do not descend: types met outside annotations (`x as T`)
_BLANK = 2  # blank the whole node: annotations, type parameters/arguments, modifiers
_REMOVE = 3  # blank a whole statement or class member, leaving `;`
_ENUM = 4
_NAMESPACE = 5
_DECORATOR = 6
_IMPORT = 7
_EXPORT = 8
_IMPORT_ALIAS = 9
_TYPE_SPECIFIER = 10  # import/export specifier, maybe `type X`
_AS = 11  # `x as T`, `x satisfies T`
_NON_NULL = 12
_PARAMETER = 13
_FIELD = 14
_METHOD = 15
_DECLARATOR = 16
_ABSTRACT_CLASS = 17
_ARROW = 18
_STATEMENT = 19  # may need a `;` where a removed tail ends it
_RETURN = 20  # also a _STATEMENT

_TYPE_KINDS: Final = (
    "array_type conditional_type constructor_type existential_type flow_maybe_type "
    "function_type generic_type index_type_query infer_type intersection_type literal_type "
    "lookup_type nested_type_identifier object_type optional_type parenthesized_type "
    "predefined_type readonly_type rest_type template_literal_type this_type tuple_type "
    "type_identifier type_predicate type_query union_type"
).split()

_ACTION_BY_NAME: Final[dict[str, int]] = {
    **dict.fromkeys(_TYPE_KINDS, _SKIP),
    "string": _SKIP,
    "regex": _SKIP,
    **dict.fromkeys(
        (
            "type_annotation",
            "type_parameters",
            "type_arguments",
            "asserts_annotation",
            "type_predicate_annotation",
            "omitting_type_annotation",
            "adding_type_annotation",
            "opting_type_annotation",
            "implements_clause",
            "accessibility_modifier",
            "override_modifier",
        ),
        _BLANK,
    ),
    **dict.fromkeys(
        (
            "interface_declaration",
            "type_alias_declaration",
            "ambient_declaration",
            "function_signature",
            # Reached only in class bodies: the walk never enters interfaces or object types.
            "method_signature",
            "abstract_method_signature",
            "index_signature",
        ),
        _REMOVE,
    ),
    "enum_declaration": _ENUM,
    "internal_module": _NAMESPACE,
    "module": _NAMESPACE,
    "decorator": _DECORATOR,
    "import_statement": _IMPORT,
    "export_statement": _EXPORT,
    "import_alias": _IMPORT_ALIAS,
    "import_specifier": _TYPE_SPECIFIER,
    "export_specifier": _TYPE_SPECIFIER,
    "as_expression": _AS,
    "satisfies_expression": _AS,
    "non_null_expression": _NON_NULL,
    "required_parameter": _PARAMETER,
    "optional_parameter": _PARAMETER,
    "public_field_definition": _FIELD,
    "method_definition": _METHOD,
    "variable_declarator": _DECLARATOR,
    "abstract_class_declaration": _ABSTRACT_CLASS,
    "arrow_function": _ARROW,
    "expression_statement": _STATEMENT,
    "lexical_declaration": _STATEMENT,
    "variable_declaration": _STATEMENT,
    "return_statement": _RETURN,
    "throw_statement": _RETURN,
}


def _action_table() -> dict[int, int]:
    """Maps every kind id of the grammar to its action (a kind name may have several ids)."""
    table: dict[int, int] = {}
    for kind_id in range(_LANGUAGE.node_kind_count):
        name = _LANGUAGE.node_kind_for_id(kind_id)
        if name in _ACTION_BY_NAME and _LANGUAGE.node_kind_is_named(kind_id):
            table[kind_id] = _ACTION_BY_NAME[name]
    return table


_ACTIONS: Final = _action_table()

# Statements that erase to nothing, so a namespace holding only these has no runtime code.
_TYPE_ONLY_STATEMENTS: Final = frozenset(
    {
        "interface_declaration",
        "type_alias_declaration",
        "ambient_declaration",
        "function_signature",
        "comment",
        "empty_statement",
    }
)
_PARAMETER_PROPERTY_MODIFIERS: Final = frozenset(
    {"accessibility_modifier", "override_modifier", "readonly"}
)
_LINE_BREAKS: Final = (b"\n", b"\r", "\u2028".encode(), "\u2029".encode())
# bytes.translate table: every ASCII byte but CR and LF becomes a space.
_ASCII_BLANK: Final = bytes(b if b in (10, 13) else 32 for b in range(256))
_KEPT_CHARS: Final = frozenset("\n\r\u2028\u2029")

_MESSAGES: Final = {
    "enum": (
        "`enum` declarations are not supported: they need code generation, which type "
        "stripping does not do; use an object literal with `as const` instead"
    ),
    "namespace": (
        "`{}` declarations with runtime code are not supported: they need code generation, "
        "which type stripping does not do; use a plain object or a module instead"
    ),
    "decorator": "decorators are not supported: the QuickJS-ng engine cannot run them",
    "accessor": (
        "auto-accessor fields (`accessor x`) are not supported: the QuickJS-ng engine cannot "
        "run them; write a getter and a setter instead"
    ),
    "parameter property": (
        "constructor parameter properties (a modifier such as `private` or `readonly` on a "
        "parameter) are not supported: they need code generation, which type stripping does "
        "not do; declare the field in the class body and assign it in the constructor"
    ),
    "import require": (
        "`import x = require(...)` is not supported: it needs code generation, which type "
        'stripping does not do; use `import x from "..."` instead'
    ),
    "import alias": (
        "`import x = A.B` aliases are not supported: they need code generation, which type "
        "stripping does not do; use `const x = A.B` instead"
    ),
    "export assignment": (
        "`export =` is not supported: it needs code generation, which type stripping does not "
        "do; use `export default` instead"
    ),
}


def _has_line_break(data: bytes) -> bool:
    """Tells whether UTF-8 `data` holds a JavaScript line terminator."""
    return any(brk in data for brk in _LINE_BREAKS)


def _is_type_only_namespace(node: tree_sitter.Node) -> bool:
    """Tells whether a namespace/module declaration holds types only, and so erases whole."""
    pending = [node]  # a worklist, not recursion: nesting depth is up to the untrusted source
    while pending:
        body = pending.pop().child_by_field_name("body")
        if body is None:  # `declare module "x";`
            continue
        for statement in body.named_children:
            kind = statement.type
            if kind in _TYPE_ONLY_STATEMENTS:
                continue
            if kind == "module":
                pending.append(statement)
                continue
            if kind == "expression_statement":
                inner = statement.named_children
                if len(inner) == 1 and inner[0].type == "internal_module":
                    pending.append(inner[0])
                    continue
                return False
            if kind not in ("export_statement", "import_statement"):
                return False
            if any(child.type == "type" and not child.is_named for child in statement.children):
                continue  # `export type { A }`, `import type { A } from "m"`
            declaration = statement.child_by_field_name("declaration")
            if declaration is None:
                return False
            if declaration.type in ("internal_module", "module"):
                pending.append(declaration)
            elif declaration.type not in _TYPE_ONLY_STATEMENTS:
                return False
    return True


def _error_starts(root: tree_sitter.Node) -> Iterator[int]:
    """Yields the start bytes of the ERROR and MISSING nodes under `root`, in order."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            yield node.start_byte
        else:
            stack.extend(reversed([child for child in node.children if child.has_error]))


def _leading_assertion(node: tree_sitter.Node) -> tuple[int, int] | None:
    """Finds a type assertion `<T>` at the very start of an expression.

    Returns:
        The start byte of the outermost such assertion and the start byte of the first token
        left after it and any directly following ones (`<A><B>x` -> `x`); None if the
        expression does not start with a type assertion.
    """
    start = node.start_byte
    while node.type != "type_assertion":
        if node.child_count == 0:
            return None
        node = node.children[0]
        if node.start_byte != start:
            return None
    while node.type == "type_assertion" and node.child_count == 2:
        node = node.children[1]
        first = node.start_byte
        while node.type != "type_assertion" and node.child_count:
            head = node.children[0]
            if head.start_byte != first:
                break
            node = head
    return start, node.start_byte


class _Stripper:
    """One stripping run: walks the tree and collects the byte ranges to blank."""

    def __init__(self, source: bytes, filename: str) -> None:
        self.source = source
        self.filename = filename
        # Byte ranges [start, end) to blank; they may touch or overlap.
        self.ranges: list[tuple[int, int]] = []
        # Byte offset (inside a blanked range) -> the character written there instead of a space.
        self.marks: dict[int, str] = {}
        # End offsets of statements that a blanked tail may end: they get a `;` there.
        self.tails: list[int] = []
        self.root: tree_sitter.Node | None = None

    # -- collecting ------------------------------------------------------------------------

    def walk(self, root: tree_sitter.Node) -> None:
        """Visits the tree in document order, deciding per node whether to descend."""
        self.root = root
        # The hot loop of the module: about 0.2 us per node, so keep it lean.
        action_of = _ACTIONS.get
        add_range = self.ranges.append
        visit = self.visit
        cursor = root.walk()
        first_child = cursor.goto_first_child
        next_sibling = cursor.goto_next_sibling
        parent = cursor.goto_parent
        while True:
            node = cursor.node
            if node is None:  # pragma: no cover - a cursor always has a node
                return
            action = action_of(node.kind_id)
            if action is None:
                if first_child():
                    continue
            elif action == _BLANK:
                if not node.has_error:
                    add_range((node.start_byte, node.end_byte))
            elif action != _SKIP and visit(action, node) and first_child():
                continue
            while not next_sibling():
                if not parent():
                    return

    def visit(self, action: int, node: tree_sitter.Node) -> bool:
        """Handles a node needing more than blanking; returns whether to visit its children."""
        if action == _STATEMENT:
            self.add_tail(node)
        elif action == _RETURN:
            self.add_tail(node)
            self.check_return_assertion(node)
        elif action == _AS:
            self.visit_as(node)
        elif action == _NON_NULL:
            if not node.has_error:
                self.ranges.append((node.end_byte - 1, node.end_byte))
        elif action == _PARAMETER:
            return self.visit_parameter(node)
        elif action == _DECLARATOR or action == _METHOD:
            self.blank_tokens(node, ("!", "?"))
        elif action == _FIELD:
            return self.visit_field(node)
        elif action == _ARROW:
            self.visit_arrow(node)
        elif action == _ABSTRACT_CLASS:
            self.blank_tokens(node, ("abstract",))
        elif action == _REMOVE:
            self.remove(node)
            return False
        elif action == _IMPORT:
            return self.visit_import(node)
        elif action == _EXPORT:
            return self.visit_export(node)
        elif action == _TYPE_SPECIFIER:
            self.visit_specifier(node)
            return False
        elif action == _NAMESPACE:
            self.visit_namespace(node, node)
            return False
        elif action == _ENUM:
            self.refuse("enum", node)
        elif action == _DECORATOR:
            self.refuse("decorator", node)
        elif action == _IMPORT_ALIAS:
            self.refuse("import alias", node)
        return True

    def refuse(self, what: str, node: tree_sitter.Node) -> None:
        """Raises TypeScriptError for `node`, unless it is part of a syntax error."""
        if node.has_error:
            return  # leave it to the JavaScript engine, which reports the syntax error
        if self.root is not None and self.root.has_error:
            for error in _error_starts(self.root):
                if error >= node.start_byte:
                    break
                if not any(start <= error < end for start, end in self.ranges):
                    return  # the engine stops at this earlier syntax error: let it report it
        if what == "enum":
            first = node.children[0]
            message = _MESSAGES["enum"]
            if first.type == "const":
                message = "`const " + message[1:]
        elif what == "namespace":
            message = _MESSAGES["namespace"].format(node.children[0].type)
        else:
            message = _MESSAGES[what]
        row, byte_column = node.start_point
        line_start = node.start_byte - byte_column
        column = len(self.source[line_start : node.start_byte].decode("utf-8", "replace")) + 1
        raise TypeScriptError(message, line=row + 1, column=column, filename=self.filename)

    def remove(self, node: tree_sitter.Node) -> None:
        """Blanks a whole statement or class member, writing `;` at its start."""
        if node.has_error:
            return
        self.ranges.append((node.start_byte, node.end_byte))
        self.marks[node.start_byte] = ";"

    def add_tail(self, node: tree_sitter.Node) -> None:
        """Notes a statement not ended by `;`, in case its end is blanked."""
        end = node.end_byte
        if self.source[end - 1 : end] != b";" and self.source[end : end + 1] != b";":
            self.tails.append(end)

    def blank_tokens(self, node: tree_sitter.Node, tokens: tuple[str, ...]) -> None:
        """Blanks the node's own keyword/punctuation children named in `tokens`."""
        for child in node.children:
            if not child.is_named and child.type in tokens:
                self.ranges.append((child.start_byte, child.end_byte))

    def visit_as(self, node: tree_sitter.Node) -> None:
        """Blanks ` as T` / ` satisfies T` from the keyword to the end of the type."""
        if node.child_count < 3 or node.has_error:
            return
        keyword = node.children[1].start_byte
        self.ranges.append((keyword, node.end_byte))
        parent = node.parent
        if parent is not None and parent.type == "call_expression" and parent.children[0] == node:
            # `x as T` + line break + `(y)`: TypeScript ends the statement after `T` (a call
            # cannot follow a binary expression); tree-sitter reads a call, JavaScript would too.
            arguments = parent.child_by_field_name("arguments")
            if arguments is not None and _has_line_break(
                self.source[node.end_byte : arguments.start_byte]
            ):
                self.marks[keyword] = ";"

    def visit_parameter(self, node: tree_sitter.Node) -> bool:
        """Blanks `?` and `this: T` parameters; refuses parameter properties."""
        if node.has_error:
            return True
        children = node.children
        for child in children:
            kind = child.type
            if kind in _PARAMETER_PROPERTY_MODIFIERS:
                self.refuse("parameter property", node)
            elif kind == "?" and not child.is_named:
                self.ranges.append((child.start_byte, child.end_byte))
        pattern = node.child_by_field_name("pattern")
        if pattern is not None and pattern.type == "this":
            # `this: T` parameter: blank it and its comma.
            self.ranges.append((node.start_byte, node.end_byte))
            following = node.next_sibling
            if following is not None and following.type == ",":
                self.ranges.append((following.start_byte, following.end_byte))
            return False
        return True

    def visit_field(self, node: tree_sitter.Node) -> bool:
        """Blanks a class field's `readonly`, `?` and `!`; removes `declare`/`abstract` ones."""
        self.add_tail(node)
        for child in node.children:
            if child.is_named:
                continue
            kind = child.type
            if kind == "declare" or kind == "abstract":
                self.remove(node)  # `declare x: T`, `abstract x: T` emit nothing
                return False
            if kind == "accessor":
                self.refuse("accessor", node)
            if kind in ("readonly", "?", "!"):
                self.ranges.append((child.start_byte, child.end_byte))
        return True

    def visit_arrow(self, node: tree_sitter.Node) -> None:
        """Handles the two places where an arrow function is sensitive to blanking."""
        body = node.child_by_field_name("body")
        if body is not None and body.type == "type_assertion" and not body.has_error:
            # `() => <T>{ a: 1 }`: without the assertion, `{` would open a block body, so
            # `<T>` (3 characters at least) becomes `0||`, keeping the object as the value.
            found = _leading_assertion(body)
            if found is not None and self.source[found[1] : found[1] + 1] == b"{":
                self.marks.update({found[0]: "0", found[0] + 1: "|", found[0] + 2: "|"})
        # A return type spanning lines: JavaScript allows no line break before `=>`, so `)`
        # moves to the end of the type.
        return_type = node.child_by_field_name("return_type")
        if return_type is None or return_type.has_error:
            return
        parameters = node.child_by_field_name("parameters")
        if parameters is None or parameters.has_error:
            return
        close = parameters.end_byte - 1
        if self.source[close : close + 1] != b")":
            return
        if not _has_line_break(self.source[close : return_type.end_byte]):
            return
        last = return_type.end_byte - 1
        while self.source[last] & 0xC0 == 0x80:  # back to the first byte of the last character
            last -= 1
        self.ranges.append((close, close + 1))
        self.marks[last] = ")"

    def check_return_assertion(self, node: tree_sitter.Node) -> None:
        """Keeps `return <T>` + line break + operand returning the operand: `return 0,`."""
        if node.child_count < 2 or node.has_error:
            return
        found = _leading_assertion(node.children[1])
        if found is not None:
            assertion, kept = found
            if _has_line_break(self.source[assertion:kept]):
                self.marks[assertion] = "0"
                self.marks[assertion + 1] = ","

    def visit_import(self, node: tree_sitter.Node) -> bool:
        """Removes `import type ...`; refuses `import x = require(...)`."""
        children = node.children
        if len(children) > 1 and children[1].type == "type" and not children[1].is_named:
            self.remove(node)  # `import type ...`
            return False
        for child in children:
            if child.type == "import_require_clause":
                self.refuse("import require", node)
        return True

    def visit_export(self, node: tree_sitter.Node) -> bool:
        """Removes exports of types and type-only declarations; refuses `export =`."""
        children = node.children
        second = children[1] if len(children) > 1 else None
        if second is not None and not second.is_named:
            if second.type == "type":  # `export type { A }`
                self.remove(node)
                return False
            if second.type == "=":
                self.refuse("export assignment", node)
            if second.type == "as":  # `export as namespace X`
                self.remove(node)
                return False
        if (
            second is not None
            and second.type == "ERROR"
            and second.text == b"type"
            and len(children) > 2
            and children[2].type in ("*", "namespace_export")
            and not any(child.has_error for child in children[2:])
        ):
            # `export type * from "m"`: valid TypeScript the grammar does not know.
            self.ranges.append((node.start_byte, node.end_byte))
            self.marks[node.start_byte] = ";"
            return False
        declaration = node.child_by_field_name("declaration")
        if declaration is not None:
            kind = declaration.type
            if kind in _TYPE_ONLY_STATEMENTS:
                self.remove(node)
                return False
            if kind in ("internal_module", "module"):
                self.visit_namespace(declaration, node)
                return False
            if kind == "import_alias":
                self.refuse("import alias", declaration)
        else:
            self.add_tail(node)  # `export default x as T`
        return True

    def visit_specifier(self, node: tree_sitter.Node) -> None:
        """Blanks `type A` (and its comma) in `import { type A, b }` / `export { type A }`."""
        if node.has_error or node.child_count < 2:
            return
        first = node.children[0]
        if first.type != "type" or first.is_named:
            return
        self.ranges.append((node.start_byte, node.end_byte))
        following = node.next_sibling
        if following is not None and following.type == ",":
            self.ranges.append((following.start_byte, following.end_byte))

    def visit_namespace(self, node: tree_sitter.Node, statement: tree_sitter.Node) -> None:
        """Erases a types-only namespace/module (with its statement); refuses any other."""
        if node.has_error:
            return
        if not _is_type_only_namespace(node):
            self.refuse("namespace", node)
        if statement is node:
            parent = node.parent
            if parent is not None and parent.type == "expression_statement":
                statement = parent
        self.remove(statement)

    # -- output --------------------------------------------------------------------------

    def render(self) -> bytes:
        """Returns the source with the collected ranges blanked and marks written."""
        source = self.source
        ranges = sorted(self.ranges)
        merged: list[list[int]] = []
        for start, end in ranges:
            if merged and start <= merged[-1][1]:
                if end > merged[-1][1]:
                    merged[-1][1] = end
            else:
                merged.append([start, end])
        marks = self.marks
        if self.tails:
            start_by_end = {end: start for start, end in merged}
            for tail in self.tails:
                tail_start = start_by_end.get(tail)
                if tail_start is not None and tail_start not in marks:
                    marks[tail_start] = ";"
        mark_offsets = sorted(marks)
        next_mark = 0
        pieces: list[bytes] = []
        position = 0
        for start, end in merged:
            pieces.append(source[position:start])
            chunk = source[start:end]
            while next_mark < len(mark_offsets) and mark_offsets[next_mark] < start:
                next_mark += 1
            first_mark = next_mark
            while next_mark < len(mark_offsets) and mark_offsets[next_mark] < end:
                next_mark += 1
            if chunk.isascii():
                blank = bytearray(chunk.translate(_ASCII_BLANK))
                for offset in mark_offsets[first_mark:next_mark]:
                    if blank[offset - start] == 32:
                        blank[offset - start] = ord(marks[offset])
                pieces.append(bytes(blank))
            else:
                text = chunk.decode("utf-8", "surrogatepass")
                chars = [c if c in _KEPT_CHARS else " " for c in text]
                for offset in mark_offsets[first_mark:next_mark]:
                    index = len(source[start:offset].decode("utf-8", "surrogatepass"))
                    if chars[index] == " ":
                        chars[index] = marks[offset]
                pieces.append("".join(chars).encode("utf-8", "surrogatepass"))
            position = end
        pieces.append(source[position:])
        return b"".join(pieces)


def strip_types(source: str, *, filename: str = "<run_code>") -> str:
    """Turns TypeScript into JavaScript by blanking its types, keeping every position.

    Args:
        source: TypeScript source text.
        filename: Name of the source, used in error messages.

    Returns:
        JavaScript of the same length in code points, with every kept character at its
        original line and column (see the module docstring for the exact rule).

    Raises:
        TypeScriptError: The source uses a construct that needs code generation (``enum``,
            a namespace with values, constructor parameter properties, ``import x = ...``,
            ``export =``) or a decorator. Syntax errors are not raised: such text is left for
            the JavaScript engine to report.
    """
    data = source.encode("utf-8", "surrogatepass")
    tree = _parser().parse(data)
    stripper = _Stripper(data, filename)
    stripper.walk(tree.root_node)
    if not stripper.ranges:
        return source
    return stripper.render().decode("utf-8", "surrogatepass")
