"""The TypeScript grammar as the type stripper sees it: what it does per node kind, and its
refusal messages (:mod:`._typescript_walk` walks the tree with these tables).

Kinds are looked up by tree-sitter's numeric kind id (a name may have several ids), so the
walk's hot loop compares integers, not strings.
"""

from __future__ import annotations

from typing import Final

import tree_sitter
import tree_sitter_typescript

__all__ = [
    "ABSTRACT_CLASS",
    "ACTIONS",
    "ARROW",
    "AS",
    "ASCII_BLANK",
    "AS_IDS",
    "BLANK",
    "CALL",
    "CLASS",
    "COMMA",
    "COMMA_IDS",
    "DECLARATOR",
    "DECORATOR",
    "DESCEND",
    "ENUM",
    "EXPORT",
    "FIELD",
    "IMPORT",
    "IMPORT_ALIAS",
    "INDEXED_TYPE_IDS",
    "INTERNAL_MODULE_IDS",
    "KEPT_CHARS",
    "LANGUAGE",
    "LINE_BREAKS",
    "MESSAGES",
    "METHOD",
    "NAMESPACE",
    "NEXT",
    "NON_NULL",
    "PARAMETER",
    "PARAMETER_PROPERTY_MODIFIERS",
    "REMOVE",
    "RETURN",
    "SAME_LINE_MODIFIERS",
    "SKIP",
    "STATEMENT",
    "TYPE",
    "TYPE_ASSERTION_IDS",
    "TYPE_ONLY_STATEMENTS",
    "TYPE_SPECIFIER",
    "has_line_break",
]

LANGUAGE: Final = tree_sitter.Language(tree_sitter_typescript.language_typescript())


# What the tree walk does on meeting a node of a kind (by kind id); kinds not listed are
# descended into and left as they are.
SKIP = 1  # leave as is, do not descend: strings, regular expressions
BLANK = 2  # blank the whole node: annotations, type parameters/arguments, modifiers
REMOVE = 3  # blank a whole statement or class member, leaving `;`
ENUM = 4
NAMESPACE = 5
DECORATOR = 6
IMPORT = 7
EXPORT = 8
IMPORT_ALIAS = 9
TYPE_SPECIFIER = 10  # import/export specifier, maybe `type X`
AS = 11  # `x as T`, `x satisfies T`
NON_NULL = 12
PARAMETER = 13
FIELD = 14
METHOD = 15
DECLARATOR = 16
ABSTRACT_CLASS = 17
ARROW = 18
STATEMENT = 19  # may need a `;` where a removed tail ends it
RETURN = 20  # also a STATEMENT
TYPE = 21  # like SKIP, for types met outside annotations (`x as T`)
CALL = 22
CLASS = 23  # may have a constructor with parameter properties

_TYPE_KINDS: Final = (
    "array_type conditional_type constructor_type existential_type flow_maybe_type "
    "function_type generic_type index_type_query infer_type intersection_type literal_type "
    "lookup_type nested_type_identifier object_type optional_type parenthesized_type "
    "predefined_type readonly_type rest_type template_literal_type this_type tuple_type "
    "type_identifier type_predicate type_query union_type"
).split()

_ACTION_BY_NAME: Final[dict[str, int]] = {
    **dict.fromkeys(_TYPE_KINDS, TYPE),
    "string": SKIP,
    "regex": SKIP,
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
        BLANK,
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
        REMOVE,
    ),
    "enum_declaration": ENUM,
    "internal_module": NAMESPACE,
    "module": NAMESPACE,
    "decorator": DECORATOR,
    "import_statement": IMPORT,
    "export_statement": EXPORT,
    "import_alias": IMPORT_ALIAS,
    "import_specifier": TYPE_SPECIFIER,
    "export_specifier": TYPE_SPECIFIER,
    "as_expression": AS,
    "satisfies_expression": AS,
    "non_null_expression": NON_NULL,
    "required_parameter": PARAMETER,
    "optional_parameter": PARAMETER,
    "public_field_definition": FIELD,
    "method_definition": METHOD,
    "variable_declarator": DECLARATOR,
    "abstract_class_declaration": ABSTRACT_CLASS,
    "class_declaration": CLASS,
    "class": CLASS,
    "arrow_function": ARROW,
    "expression_statement": STATEMENT,
    "lexical_declaration": STATEMENT,
    "variable_declaration": STATEMENT,
    "return_statement": RETURN,
    "throw_statement": RETURN,
    "call_expression": CALL,
}


def _action_table() -> dict[int, int]:
    """Maps every kind id of the grammar to its action (a kind name may have several ids)."""
    table: dict[int, int] = {}
    for kind_id in range(LANGUAGE.node_kind_count):
        name = LANGUAGE.node_kind_for_id(kind_id)
        if name in _ACTION_BY_NAME and LANGUAGE.node_kind_is_named(kind_id):
            table[kind_id] = _ACTION_BY_NAME[name]
    return table


ACTIONS: Final = _action_table()


def _kind_ids(*names: str, named: bool = True) -> frozenset[int]:
    """Every kind id of the grammar with one of these names."""
    return frozenset(
        kind_id
        for kind_id in range(LANGUAGE.node_kind_count)
        if LANGUAGE.node_kind_for_id(kind_id) in names
        and LANGUAGE.node_kind_is_named(kind_id) == named
    )


COMMA_IDS: Final = _kind_ids(",", named=False)
AS_IDS: Final = _kind_ids("as_expression", "satisfies_expression")
TYPE_ASSERTION_IDS: Final = _kind_ids("type_assertion")
INTERNAL_MODULE_IDS: Final = _kind_ids("internal_module")
# Types that TypeScript ends at a line break before their `[`.
INDEXED_TYPE_IDS: Final = _kind_ids("array_type", "lookup_type")
# What `visit` asks of the walk next.
NEXT = 0  # go on with the next sibling
DESCEND = 1  # visit the node's children
COMMA = 2  # blank the next sibling if it is a comma, then go on

# Statements that erase to nothing, so a namespace holding only these has no runtime code.
TYPE_ONLY_STATEMENTS: Final = frozenset(
    {
        "interface_declaration",
        "type_alias_declaration",
        "ambient_declaration",
        "function_signature",
        "comment",
        "empty_statement",
    }
)
PARAMETER_PROPERTY_MODIFIERS: Final = frozenset(
    {"accessibility_modifier", "override_modifier", "readonly"}
)
# Modifiers that TypeScript takes as a modifier only when the next token is on the same line.
SAME_LINE_MODIFIERS: Final = frozenset(
    {"accessibility_modifier", "override_modifier", "abstract", "declare", "readonly", "accessor"}
)
LINE_BREAKS: Final = (b"\n", b"\r", "\u2028".encode(), "\u2029".encode())
# bytes.translate table: every ASCII byte but CR and LF becomes a space.
ASCII_BLANK: Final = bytes(b if b in (10, 13) else 32 for b in range(256))
KEPT_CHARS: Final = frozenset("\n\r\u2028\u2029")

MESSAGES: Final = {
    "enum": (
        "this `enum` member's name is not supported: name a member by an identifier or a "
        "string literal"
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
        "parameter properties (a modifier such as `private` or `readonly` on a parameter) are "
        "allowed only on a constructor's parameters named by an identifier, as in TypeScript"
    ),
    "parameter property super": (
        "parameter properties of a class that extends another need a `super(...)` call as a "
        "statement of the constructor's body, as in TypeScript"
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
    "modifier line break": (
        "`{}` followed by a line break is not a modifier in TypeScript: it is read as a name of "
        "its own and the next line as separate code; put it on the line of what it modifies"
    ),
    "type line break": (
        "a line break before `[` ends a type in TypeScript, so this `[` starts new code rather "
        "than an array or indexed type; put `[` on the type's line, or end the statement "
        "with `;` before it"
    ),
}


def has_line_break(data: bytes, start: int, end: int) -> bool:
    """Tells whether `data[start:end]` (UTF-8) holds a JavaScript line terminator."""
    return any(data.find(brk, start, end) >= 0 for brk in LINE_BREAKS)
