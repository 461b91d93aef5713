"""The type stripper's tree walk: which byte ranges of a parsed TypeScript source to blank.

The tree is walked once with a cursor and each helper looks at a node's own children or at a
byte span no other helper scans (never at a node's parent or siblings, which tree-sitter finds
by descending from the root each time), so the work is linear in the source; every step is
counted against a budget all the same (see :class:`Stripper`).
"""

from __future__ import annotations

import re

import tree_sitter

from quickjail.sandbox._typescript_error import TypeScriptError, max_output_bytes
from quickjail.sandbox._typescript_generate import visit_class, visit_enum
from quickjail.sandbox._typescript_kinds import (
    ABSTRACT_CLASS,
    ACTIONS,
    ARROW,
    AS,
    AS_IDS,
    ASCII_BLANK,
    BLANK,
    CALL,
    CLASS,
    COMMA,
    COMMA_IDS,
    DECLARATOR,
    DECORATOR,
    DESCEND,
    ENUM,
    EXPORT,
    FIELD,
    IMPORT,
    IMPORT_ALIAS,
    INDEXED_TYPE_IDS,
    INTERNAL_MODULE_IDS,
    KEPT_CHARS,
    MESSAGES,
    METHOD,
    NAMESPACE,
    NEXT,
    NON_NULL,
    PARAMETER,
    PARAMETER_PROPERTY_MODIFIERS,
    REMOVE,
    RETURN,
    SAME_LINE_MODIFIERS,
    SKIP,
    STATEMENT,
    TYPE,
    TYPE_ASSERTION_IDS,
    TYPE_ONLY_STATEMENTS,
    TYPE_SPECIFIER,
    has_line_break,
)

__all__ = ["Stripper"]

_LINE_BREAK = re.compile(rb"\r\n|\r|\n|\xe2\x80[\xa8\xa9]")


class Stripper:
    """One stripping run: walks the tree and collects the byte ranges to blank.

    Every loop over tree nodes or collected ranges counts its steps in ``work`` (the walk in
    ``visited``); :meth:`count` stops the run once they pass the budget.
    """

    def __init__(self, source: bytes, filename: str, work_per_byte: int) -> None:
        self.source = source
        self.filename = filename
        # Byte ranges [start, end) to blank; they may touch or overlap.
        self.ranges: list[tuple[int, int]] = []
        # Byte offset (inside a blanked range) -> the character written there instead of a space.
        self.marks: dict[int, str] = {}
        # End offsets of statements that a blanked tail may end: they get a `;` there.
        self.tails: list[int] = []
        # Byte spans replaced by generated code (enums, parameter properties: see
        # ._typescript_generate); they touch no blanked range.
        self.edits: list[tuple[int, int, bytes]] = []
        self.generated = 0
        self.generated_limit = max_output_bytes(len(source)) - len(source)
        # Start offsets of the parameters that are parameter properties of a constructor.
        self.parameter_properties: set[int] = set()
        self.root: tree_sitter.Node | None = None
        # Set once a refusal met an earlier syntax error: every later one is left to the engine.
        self.refusals_left = False
        self.work_per_byte = work_per_byte
        self.budget = work_per_byte * (len(source) + 64)
        self.visited = 0  # nodes the walk visited
        self.work = 0  # steps of the helpers

    def count(self, steps: int) -> None:
        """Adds helper steps; raises TypeScriptError once the run is over its budget."""
        self.work += steps
        if self.work > self.budget or self.visited > self.budget:
            message = (
                f"type stripping stopped after {self.budget} steps, its limit for a source of "
                f"{len(self.source)} bytes (WORK_PER_BYTE = {self.work_per_byte} per byte)"
            )
            raise TypeScriptError(message, line=1, column=1, filename=self.filename)

    def edit(self, start: int, end: int, text: str) -> None:
        """Replaces `source[start:end]` by `text`, followed by the span's own line breaks."""
        span = self.source[start:end]
        data = text.encode("utf-8", "surrogatepass")
        if span:
            self.count(len(span))
            data += b"".join(_LINE_BREAK.findall(span))
        self.generated += len(data)
        if self.generated > self.generated_limit:
            message = (
                f"the code generated for enums and parameter properties is over "
                f"{self.generated_limit} bytes, the limit for a source of {len(self.source)} "
                f"bytes (GENERATED_PER_BYTE)"
            )
            raise TypeScriptError(message, line=1, column=1, filename=self.filename)
        self.edits.append((start, end, data))

    # -- collecting ------------------------------------------------------------------------

    def walk(self, root: tree_sitter.Node) -> None:
        """Visits the tree in document order, deciding per node whether to descend."""
        self.root = root
        # The hot loop of the module: about 0.2 us per node, so keep it lean.
        action_of = ACTIONS.get
        add_range = self.ranges.append
        visit = self.visit
        check_types = self.check_types
        cursor = root.walk()
        first_child = cursor.goto_first_child
        next_sibling = cursor.goto_next_sibling
        parent = cursor.goto_parent
        visited = 0
        budget = self.budget
        try:
            while True:
                node = cursor.node
                if node is None:  # pragma: no cover - a cursor always has a node
                    return
                visited += 1
                if visited > budget:
                    self.visited = visited
                    self.count(0)
                action = action_of(node.kind_id)
                if action is None:
                    if first_child():
                        continue
                elif action == BLANK:
                    if not node.has_error:
                        add_range((node.start_byte, node.end_byte))
                        check_types(node)
                elif action == TYPE:
                    check_types(node)
                elif action != SKIP:
                    step = visit(action, node)
                    if step == DESCEND:
                        if first_child():
                            continue
                    elif step == COMMA and next_sibling():
                        following = cursor.node
                        if following is not None and following.kind_id in COMMA_IDS:
                            add_range((following.start_byte, following.end_byte))
                        continue
                while not next_sibling():
                    if not parent():
                        return
        finally:
            self.visited = visited

    def visit(self, action: int, node: tree_sitter.Node) -> int:
        """Handles a node needing more than blanking; returns what the walk does next."""
        if action == STATEMENT:
            self.add_tail(node)
            inner = node.child(0) if node.child_count else None
            if inner is not None and inner.kind_id in INTERNAL_MODULE_IDS:
                self.visit_namespace(inner, node)  # `namespace N {}` is an expression statement
                return NEXT
        elif action == RETURN:
            self.add_tail(node)
            self.check_return_assertion(node)
        elif action == AS:
            self.visit_as(node)
        elif action == CALL:
            self.visit_call(node)
        elif action == NON_NULL:
            if not node.has_error:
                self.ranges.append((node.end_byte - 1, node.end_byte))
        elif action == PARAMETER:
            return self.visit_parameter(node)
        elif action == DECLARATOR:
            self.blank_tokens(node, self.children(node), ("!", "?"))
        elif action == METHOD:
            children = self.children(node)
            self.check_modifiers(node, children)
            self.blank_tokens(node, children, ("!", "?"))
        elif action == FIELD:
            return self.visit_field(node)
        elif action == ARROW:
            self.visit_arrow(node)
        elif action == ABSTRACT_CLASS:
            children = self.children(node)
            self.check_modifiers(node, children)
            self.blank_tokens(node, children, ("abstract",))
            visit_class(self, node)
        elif action == CLASS:
            visit_class(self, node)
        elif action == REMOVE:
            self.remove(node)
            return NEXT
        elif action == IMPORT:
            return self.visit_import(node)
        elif action == EXPORT:
            return self.visit_export(node)
        elif action == TYPE_SPECIFIER:
            return self.visit_specifier(node)
        elif action == NAMESPACE:
            self.visit_namespace(node, node)
            return NEXT
        elif action == ENUM:
            visit_enum(self, node)
        elif action == DECORATOR:
            self.refuse("decorator", node)
        elif action == IMPORT_ALIAS:
            self.refuse("import alias", node)
        return DESCEND

    def children(self, node: tree_sitter.Node) -> list[tree_sitter.Node]:
        """Returns the node's children, counting them as work."""
        children = node.children
        self.count(len(children) + 1)
        return children

    def refuse(self, what: str, node: tree_sitter.Node, word: str = "") -> None:
        """Raises TypeScriptError for `node`, unless it is part of a syntax error."""
        if node.has_error or self.refusals_left:
            return  # leave it to the JavaScript engine, which reports the syntax error
        if self.earlier_syntax_error(node.start_byte):
            # The engine stops at that error: let it report it. The walk goes on in document
            # order, so the error precedes every later refusal too.
            self.refusals_left = True
            return
        if what == "namespace":
            message = MESSAGES["namespace"].format(node.children[0].type)
        else:
            message = MESSAGES[what].format(word)
        row, byte_column = node.start_point
        line_start = node.start_byte - byte_column
        column = len(self.source[line_start : node.start_byte].decode("utf-8", "replace")) + 1
        raise TypeScriptError(message, line=row + 1, column=column, filename=self.filename)

    def earlier_syntax_error(self, position: int) -> bool:
        """Tells whether a syntax error that stays in the output starts before `position`.

        Called at most once per run (see :meth:`refuse`), so one pass over the error-holding
        part of the tree and one sort of the ranges are its whole cost.
        """
        root = self.root
        if root is None or not root.has_error:
            return False
        merged = self.merged_ranges()
        index = 0
        cursor = root.walk()
        while True:
            self.count(1)
            node = cursor.node
            if node is None:  # pragma: no cover - a cursor always has a node
                return False
            descend = False
            if node.is_error or node.is_missing:
                error = node.start_byte
                if error >= position:
                    return False
                while index < len(merged) and merged[index][1] <= error:
                    index += 1
                if index == len(merged) or merged[index][0] > error:
                    return True  # not blanked: the engine sees it
            elif node.has_error:
                descend = True
            if descend and cursor.goto_first_child():
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    return False

    def merged_ranges(self) -> list[list[int]]:
        """Returns the collected ranges sorted, with touching or overlapping ones joined."""
        self.count(len(self.ranges))
        merged: list[list[int]] = []
        for start, end in sorted(self.ranges):
            if merged and start <= merged[-1][1]:
                if end > merged[-1][1]:
                    merged[-1][1] = end
            else:
                merged.append([start, end])
        return merged

    def check_types(self, node: tree_sitter.Node) -> None:
        """Refuses an array or indexed type whose `[` follows a line break (TypeScript ends
        the type there; tree-sitter may read on and so blank the code after it).

        Called only on subtrees the walk does not enter, so each node is checked once.
        """
        source = self.source
        start, end = node.start_byte, node.end_byte
        if source.find(b"[", start, end) < 0 or not has_line_break(source, start, end):
            return
        cursor = node.walk()
        while True:
            self.count(1)
            current = cursor.node
            if current is None:  # pragma: no cover - a cursor always has a node
                return
            if current.kind_id in INDEXED_TYPE_IDS and not current.has_error:
                children = self.children(current)
                bracket = next((c for c in children if c.type == "[" and not c.is_named), None)
                # The gap holds any comments too: a line break inside one counts, as in tsc.
                if bracket is not None and has_line_break(
                    source, children[0].end_byte, bracket.start_byte
                ):
                    self.refuse("type line break", bracket)
            if cursor.goto_first_child():
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    return

    def check_modifiers(self, node: tree_sitter.Node, children: list[tree_sitter.Node]) -> None:
        """Refuses a modifier followed by a line break that tree-sitter still took as one."""
        if node.has_error:
            return
        source = self.source
        modifier: tree_sitter.Node | None = None
        for child in children:
            kind = child.type
            if kind == "comment":
                continue  # the gap after a modifier spans comments (a line break in one counts)
            if modifier is not None and has_line_break(source, modifier.end_byte, child.start_byte):
                word = source[modifier.start_byte : modifier.end_byte].decode("utf-8", "replace")
                self.refuse("modifier line break", modifier, word)
            modifier = child if kind in SAME_LINE_MODIFIERS else None

    def leading_assertion(self, node: tree_sitter.Node) -> tuple[int, int] | None:
        """Finds a type assertion `<T>` at the very start of an expression.

        Returns:
            The start byte of the outermost such assertion and the start byte of the first
            token left after it and any directly following ones (`<A><B>x` -> `x`); None if
            the expression does not start with a type assertion.
        """
        start = node.start_byte
        while node.kind_id not in TYPE_ASSERTION_IDS:
            self.count(1)
            head = node.child(0) if node.child_count else None
            if head is None or head.start_byte != start:
                return None
            node = head
        while node.kind_id in TYPE_ASSERTION_IDS and node.child_count == 2:
            operand = node.child(1)
            if operand is None:  # pragma: no cover - child_count said 2
                break
            node = operand
            first = node.start_byte
            while node.kind_id not in TYPE_ASSERTION_IDS:
                self.count(1)
                head = node.child(0) if node.child_count else None
                if head is None or head.start_byte != first:
                    break
                node = head
        return start, node.start_byte

    def is_type_only_namespace(self, node: tree_sitter.Node) -> bool:
        """Tells whether a namespace/module declaration holds types only, and so erases whole."""
        pending = [node]  # a worklist, not recursion: nesting depth is up to the untrusted source
        while pending:
            body = pending.pop().child_by_field_name("body")
            if body is None:  # `declare module "x";`
                continue
            for statement in self.children(body):
                if not statement.is_named:
                    continue
                kind = statement.type
                if kind in TYPE_ONLY_STATEMENTS:
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
                children = self.children(statement)
                if any(child.type == "type" and not child.is_named for child in children):
                    continue  # `export type { A }`, `import type { A } from "m"`
                declaration = statement.child_by_field_name("declaration")
                if declaration is None:
                    return False
                if declaration.type in ("internal_module", "module"):
                    pending.append(declaration)
                elif declaration.type not in TYPE_ONLY_STATEMENTS:
                    return False
        return True

    def remove(self, node: tree_sitter.Node) -> None:
        """Blanks a whole statement or class member, writing `;` at its start."""
        if node.has_error:
            return
        self.check_modifiers(node, self.children(node))
        self.check_types(node)
        self.ranges.append((node.start_byte, node.end_byte))
        self.marks[node.start_byte] = ";"

    def add_tail(self, node: tree_sitter.Node) -> None:
        """Notes a statement not ended by `;`, in case its end is blanked."""
        end = node.end_byte
        if self.source[end - 1 : end] != b";" and self.source[end : end + 1] != b";":
            self.tails.append(end)

    def blank_tokens(
        self, node: tree_sitter.Node, children: list[tree_sitter.Node], tokens: tuple[str, ...]
    ) -> None:
        """Blanks the node's own keyword/punctuation children named in `tokens`."""
        for child in children:
            if not child.is_named and child.type in tokens:
                self.ranges.append((child.start_byte, child.end_byte))

    def visit_as(self, node: tree_sitter.Node) -> None:
        """Blanks ` as T` / ` satisfies T` from the keyword to the end of the type."""
        if node.child_count < 3 or node.has_error:
            return
        keyword = node.child(1)
        if keyword is not None:
            self.ranges.append((keyword.start_byte, node.end_byte))

    def visit_call(self, node: tree_sitter.Node) -> None:
        """`x as T` + line break + `(y)`: TypeScript ends the statement after `T` (a call
        cannot follow a binary expression); tree-sitter reads a call, JavaScript would too."""
        function = node.child(0) if node.child_count else None
        if (
            function is None
            or function.kind_id not in AS_IDS
            or function.child_count < 3
            or function.has_error
        ):
            return
        keyword = function.child(1)
        arguments = node.child_by_field_name("arguments")
        if (
            keyword is not None
            and arguments is not None
            and has_line_break(self.source, function.end_byte, arguments.start_byte)
        ):
            self.marks[keyword.start_byte] = ";"

    def visit_parameter(self, node: tree_sitter.Node) -> int:
        """Blanks `?` and `this: T` parameters, and the modifiers of a constructor's parameter
        properties; refuses any other parameter with modifiers."""
        if node.has_error:
            return DESCEND
        for child in self.children(node):
            kind = child.type
            if kind in PARAMETER_PROPERTY_MODIFIERS:
                if node.start_byte not in self.parameter_properties:
                    self.refuse("parameter property", node)
                self.ranges.append((child.start_byte, child.end_byte))
            elif kind == "?" and not child.is_named:
                self.ranges.append((child.start_byte, child.end_byte))
        pattern = node.child_by_field_name("pattern")
        if pattern is not None and pattern.type == "this":
            # `this: T` parameter: blank it and its comma.
            self.ranges.append((node.start_byte, node.end_byte))
            return COMMA
        return DESCEND

    def visit_field(self, node: tree_sitter.Node) -> int:
        """Blanks a class field's `readonly`, `?` and `!`; removes `declare`/`abstract` ones."""
        self.add_tail(node)
        children = self.children(node)
        self.check_modifiers(node, children)
        for child in children:
            if child.is_named:
                continue
            kind = child.type
            if kind == "declare" or kind == "abstract":
                self.remove(node)  # `declare x: T`, `abstract x: T` emit nothing
                return NEXT
            if kind == "accessor":
                self.refuse("accessor", node)
            if kind in ("readonly", "?", "!"):
                self.ranges.append((child.start_byte, child.end_byte))
        return DESCEND

    def visit_arrow(self, node: tree_sitter.Node) -> None:
        """Handles the two places where an arrow function is sensitive to blanking."""
        source = self.source
        body = node.child_by_field_name("body")
        if body is not None and body.kind_id in TYPE_ASSERTION_IDS and not body.has_error:
            # `() => <T>{ a: 1 }`: without the assertion, `{` would open a block body, so
            # `<T>` (3 characters at least) becomes `0||`, keeping the object as the value.
            found = self.leading_assertion(body)
            if found is not None and source[found[1] : found[1] + 1] == b"{":
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
        if source[close : close + 1] != b")":
            return
        if not has_line_break(source, close, return_type.end_byte):
            return
        last = return_type.end_byte - 1
        while source[last] & 0xC0 == 0x80:  # back to the first byte of the last character
            last -= 1
        self.ranges.append((close, close + 1))
        self.marks[last] = ")"

    def check_return_assertion(self, node: tree_sitter.Node) -> None:
        """Keeps `return <T>` + line break + operand returning the operand: `return 0,`."""
        if node.child_count < 2 or node.has_error:
            return
        operand = node.child(1)
        found = None if operand is None else self.leading_assertion(operand)
        if found is not None:
            assertion, kept = found
            if has_line_break(self.source, assertion, kept):
                self.marks[assertion] = "0"
                self.marks[assertion + 1] = ","

    def visit_import(self, node: tree_sitter.Node) -> int:
        """Removes `import type ...`; refuses `import x = require(...)`."""
        children = self.children(node)
        if len(children) > 1 and children[1].type == "type" and not children[1].is_named:
            self.remove(node)  # `import type ...`
            return NEXT
        for child in children:
            if child.type == "import_require_clause":
                self.refuse("import require", node)
        return DESCEND

    def visit_export(self, node: tree_sitter.Node) -> int:
        """Removes exports of types and type-only declarations; refuses `export =`."""
        children = self.children(node)
        second = children[1] if len(children) > 1 else None
        if second is not None and not second.is_named:
            if second.type == "type":  # `export type { A }`
                self.remove(node)
                return NEXT
            if second.type == "=":
                self.refuse("export assignment", node)
            if second.type == "as":  # `export as namespace X`
                self.remove(node)
                return NEXT
        if (
            second is not None
            and second.type == "ERROR"
            and second.end_byte - second.start_byte == 4
            and self.source[second.start_byte : second.end_byte] == b"type"
            and len(children) > 2
            and children[2].type in ("*", "namespace_export")
            and not any(child.has_error for child in children[2:])
        ):
            # `export type * from "m"`: valid TypeScript the grammar does not know.
            self.ranges.append((node.start_byte, node.end_byte))
            self.marks[node.start_byte] = ";"
            return NEXT
        declaration = node.child_by_field_name("declaration")
        if declaration is not None:
            kind = declaration.type
            if kind in TYPE_ONLY_STATEMENTS:
                self.remove(node)
                return NEXT
            if kind in ("internal_module", "module"):
                self.visit_namespace(declaration, node)
                return NEXT
            if kind == "import_alias":
                self.refuse("import alias", declaration)
        else:
            self.add_tail(node)  # `export default x as T`
        return DESCEND

    def visit_specifier(self, node: tree_sitter.Node) -> int:
        """Blanks `type A` (and its comma) in `import { type A, b }` / `export { type A }`."""
        if node.has_error or node.child_count < 2:
            return NEXT
        first = node.child(0)
        if first is None or first.type != "type" or first.is_named:
            return NEXT
        self.ranges.append((node.start_byte, node.end_byte))
        return COMMA

    def visit_namespace(self, node: tree_sitter.Node, statement: tree_sitter.Node) -> None:
        """Erases a types-only namespace/module (with its statement); refuses any other."""
        if node.has_error:
            return
        if not self.is_type_only_namespace(node):
            self.refuse("namespace", node)
        self.remove(statement)

    # -- output --------------------------------------------------------------------------

    def render(self) -> bytes:
        """Returns the source with the collected ranges blanked and marks written."""
        source = self.source
        merged = self.merged_ranges()
        marks = self.marks
        if self.tails:
            self.count(len(self.tails))
            start_by_end = {end: start for start, end in merged}
            for tail in self.tails:
                tail_start = start_by_end.get(tail)
                if tail_start is not None and tail_start not in marks:
                    marks[tail_start] = ";"
        self.count(len(marks))
        mark_offsets = sorted(marks)
        next_mark = 0
        pieces: list[bytes] = []
        position = 0
        edits = self.edits
        if edits:
            self.count(len(edits))
            edits.sort(key=lambda e: (e[0], e[1]))
        next_edit = 0
        for start, end in merged:
            # generated code before this range (an insertion at its start goes first)
            while next_edit < len(edits) and edits[next_edit][0] <= start:
                position = self.apply_edit(pieces, position, edits[next_edit])
                next_edit += 1
            start = max(start, position)
            if start >= end:
                continue
            pieces.append(source[position:start])
            chunk = source[start:end]
            while next_mark < len(mark_offsets) and mark_offsets[next_mark] < start:
                next_mark += 1
            first_mark = next_mark
            while next_mark < len(mark_offsets) and mark_offsets[next_mark] < end:
                next_mark += 1
            if chunk.isascii():
                blank = bytearray(chunk.translate(ASCII_BLANK))
                for offset in mark_offsets[first_mark:next_mark]:
                    if blank[offset - start] == 32:
                        blank[offset - start] = ord(marks[offset])
                pieces.append(bytes(blank))
            else:
                text = chunk.decode("utf-8", "surrogatepass")
                chars = [c if c in KEPT_CHARS else " " for c in text]
                # Code point index of each mark, counted on from the previous one (marks are
                # sorted), so the chunk is decoded once however many marks it holds.
                index = 0
                counted = start
                for offset in mark_offsets[first_mark:next_mark]:
                    index += len(source[counted:offset].decode("utf-8", "surrogatepass"))
                    counted = offset
                    if chars[index] == " ":
                        chars[index] = marks[offset]
                pieces.append("".join(chars).encode("utf-8", "surrogatepass"))
            position = end
        for edit in edits[next_edit:]:
            position = self.apply_edit(pieces, position, edit)
        pieces.append(source[position:])
        return b"".join(pieces)

    def apply_edit(self, pieces: list[bytes], position: int, edit: tuple[int, int, bytes]) -> int:
        """Appends the source up to an edit and its text; returns where the source goes on."""
        start, end, text = edit
        start = max(start, position)
        pieces.append(self.source[position:start])
        pieces.append(text)
        return max(end, start)
