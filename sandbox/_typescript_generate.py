"""The TypeScript that needs code generation: ``enum`` and constructor parameter properties.

The stripper (:mod:`._typescript_walk`) erases types in place; these two constructs emit code,
as Node's ``--experimental-transform-types`` does, through :meth:`Stripper.edit`: a byte span
replaced by generated text, the span's own line breaks kept after it, so every line keeps its
number (the columns of the enum's or the constructor's own lines shift, no others).

``enum E { A, B = 5, C = A * 2 }`` becomes, on the lines it was written on::

    var E;(function(E){ var A=0;E[E["A"]=A]="A";  var B=E["B"]=(5);if(typeof B!=="string")
    E[B]="B";  var C=E["C"]=(A * 2);if(typeof C!=="string")E[C]="C"; })(E||(E={}));

A member's value is set on the object and, unless it is a string, mapped back to its name;
each member is also a local ``var`` of the function, so a later initialiser names an earlier
member as TypeScript lets it (``C = A * 2``); an initialiser keeps its text and position and
has its own types stripped by the walk. A member without an
initialiser is the previous one plus 1 (0 for the first). ``const enum`` is emitted as a
regular enum object (no inlining), ``declare enum`` is erased with the other ambient
declarations, and declarations of one name merge as in TypeScript (``E || (E = {})``).

``constructor(private x: number, public readonly y = 2)`` loses its modifiers, and
``this.x=x;this.y=y;`` is inserted first in the constructor body, or after the body's
``super(...)`` statement when the class extends another.

Bounds: each helper looks at a node's own children (counted as the stripper's work), and the
generated text is counted against :func:`._typescript_error.max_output_bytes`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from quickjail.sandbox._typescript_kinds import PARAMETER_PROPERTY_MODIFIERS

if TYPE_CHECKING:
    import tree_sitter

    from quickjail.sandbox._typescript_walk import Stripper

__all__ = ["visit_class", "visit_enum"]

# Names a member cannot be bound to as a local `var` in strict code.
_NOT_BINDABLE: Final = frozenset(
    (
        "break case catch class const continue debugger default delete do else enum export "
        "extends false finally for function if import in instanceof new null return super "
        "switch this throw true try typeof var void while with yield let static implements "
        "interface package private protected public await arguments eval"
    ).split()
)
_PARAMETERS: Final = frozenset({"required_parameter", "optional_parameter"})
_METHOD_WORDS: Final = frozenset({"static", "get", "set", "*", "async"})


def visit_enum(stripper: Stripper, node: tree_sitter.Node) -> None:
    """Replaces an enum declaration's syntax by the code that builds its object, keeping each
    member's initialiser where it is (the walk then strips its types)."""
    if node.has_error:
        return  # `enum` is a reserved word: the engine reports the syntax error
    source = stripper.source
    name = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name is None or body is None:  # pragma: no cover - the grammar requires both
        return
    enum = source[name.start_byte : name.end_byte].decode("utf-8", "surrogatepass")
    members = stripper.children(body)
    if not members or members[0].type != "{" or members[-1].type != "}":  # pragma: no cover
        return
    header = f"var {enum};(function({enum}){{"
    stripper.edit(node.start_byte, members[0].end_byte, header)
    previous: str | None = None  # how the next auto-valued member reads the previous value
    for member in members[1:-1]:
        kind = member.type
        if kind == "comment":
            continue
        if kind == ",":
            stripper.ranges.append((member.start_byte, member.end_byte))
            continue
        key_node = member.child_by_field_name("name") if kind == "enum_assignment" else member
        if key_node is None or key_node.type not in ("property_identifier", "string"):
            stripper.refuse("enum", member)
            return
        raw = source[key_node.start_byte : key_node.end_byte].decode("utf-8", "surrogatepass")
        key = raw if key_node.type == "string" else f'"{raw}"'
        local = raw if _bindable(key_node, source, enum) else None
        value = member.child_by_field_name("value") if kind == "enum_assignment" else None
        slot = f"{enum}[{key}]"
        if value is None:
            auto = "0" if previous is None else f"{previous}+1"
            text = f"{enum}[{slot}={auto}]={key};"
            if local is not None:
                text = f"var {local}={auto};{enum}[{slot}={local}]={key};"
            stripper.edit(member.start_byte, member.end_byte, text)
        elif local is not None:
            stripper.edit(member.start_byte, value.start_byte, f"var {local}={slot}=(")
            check = f'if(typeof {local}!=="string"){enum}[{local}]={key};'
            stripper.edit(value.end_byte, value.end_byte, ");" + check)
        else:
            stripper.edit(member.start_byte, value.start_byte, f"if(typeof({slot}=(")
            stripper.edit(value.end_byte, value.end_byte, f'))!=="string"){enum}[{slot}]={key};')
        previous = local if local is not None else f"{enum}[{key}]"
    stripper.edit(members[-1].start_byte, members[-1].end_byte, f"}})({enum}||({enum}={{}}));")


def _bindable(key_node: tree_sitter.Node, source: bytes, enum: str) -> bool:
    """Tells whether a member's name can be a local `var` in the enum's function."""
    if key_node.type != "property_identifier":
        return False
    text = source[key_node.start_byte : key_node.end_byte].decode("utf-8", "replace")
    # Python's identifiers are Unicode's, as JavaScript's are, but for `$` (and escapes)
    if "\\" in text or not text.replace("$", "_").isidentifier():
        return False
    return text not in _NOT_BINDABLE and text != enum


def visit_class(stripper: Stripper, node: tree_sitter.Node) -> None:
    """Finds a class's constructor with parameter properties: lets the walk blank their
    modifiers and inserts their assignments at the start of its body (after `super(...)`)."""
    if node.has_error:
        return
    extends = False
    body: tree_sitter.Node | None = None
    for child in stripper.children(node):
        if child.type == "class_heritage":
            extends = any(c.type == "extends_clause" for c in stripper.children(child))
        elif child.type == "class_body":
            body = child
    if body is None:
        return
    for member in stripper.children(body):
        if member.type == "method_definition" and _is_constructor(stripper, member):
            _parameter_properties(stripper, member, extends)


def _is_constructor(stripper: Stripper, method: tree_sitter.Node) -> bool:
    name = method.child_by_field_name("name")
    if name is None or method.child_by_field_name("body") is None:
        return False
    text = stripper.source[name.start_byte : name.end_byte]
    if text not in (b"constructor", b'"constructor"', b"'constructor'"):
        return False
    return not any(not c.is_named and c.type in _METHOD_WORDS for c in stripper.children(method))


def _parameter_properties(stripper: Stripper, method: tree_sitter.Node, extends: bool) -> None:
    parameters = method.child_by_field_name("parameters")
    block = method.child_by_field_name("body")
    if parameters is None or block is None:  # pragma: no cover - checked by the caller
        return
    source = stripper.source
    names: list[str] = []
    first: tree_sitter.Node | None = None
    for parameter in stripper.children(parameters):
        if parameter.type not in _PARAMETERS or parameter.has_error:
            continue
        children = stripper.children(parameter)
        if not any(c.type in PARAMETER_PROPERTY_MODIFIERS for c in children):
            continue
        pattern = parameter.child_by_field_name("pattern")
        if pattern is None or pattern.type != "identifier":
            continue  # a binding pattern: TypeScript rejects it, the walk refuses it
        names.append(source[pattern.start_byte : pattern.end_byte].decode("utf-8", "surrogatepass"))
        stripper.parameter_properties.add(parameter.start_byte)
        first = first or parameter
    if not names or first is None:
        return
    assignments = "".join(f"this.{name}={name};" for name in names)
    if not extends:
        stripper.edit(block.start_byte + 1, block.start_byte + 1, assignments)
        return
    for statement in stripper.children(block):
        if statement.type == "expression_statement" and _is_super_call(stripper, statement):
            stripper.edit(statement.end_byte, statement.end_byte, ";" + assignments)
            return
    stripper.refuse("parameter property super", first)


def _is_super_call(stripper: Stripper, statement: tree_sitter.Node) -> bool:
    call = statement.child(0) if statement.child_count else None
    if call is None or call.type != "call_expression":
        return False
    function = call.child_by_field_name("function")
    return function is not None and function.type == "super"
