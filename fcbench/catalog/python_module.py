"""Tools from a Python module: typed signatures and docstrings -> JSON Schema tools (pure).

The module's source text is parsed (`ast`), never imported: reading it runs none of its code, and
the annotation is read as written. That matters because an annotation evaluated by Python can lose
what its author meant: NESTful's `arg_0: int or float` evaluates to `int` (`or` returns its first
truthy operand), while the text says "an integer or a float". Here it becomes
`{"type": ["integer", "number"], "x-source-type": "int or float"}`.

Which functions: the module's own top-level `def`s whose names do not start with `_`, or exactly
the names of a literal `__all__`. For each:
- `parameters`: one property per parameter, its schema from the annotation (builtins, `typing`
  generics, `X | Y`, `Optional`, `Literal[...]` as an enum, the module's own aliases such as
  `Number = int | float` and its `TypedDict` classes as objects), its description from the
  docstring (reST `:param x:` or Google `Args:`), a literal default as `default`;
  `required` = the parameters without a default;
- `description`: the docstring's first paragraph;
- `returns`: the return annotation's schema with the docstring's `Returns:` / `:return:` text.
A parameter or a return value without a type hint, `*args` / `**kwargs` and positional-only
parameters (the environment calls tools by keyword) are errors naming the function and the
parameter, raised before anything is written or run.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fcbench.catalog.types import SOURCE_TYPE_KEY, schema_for_type_text
from fcbench.errors import UserError
from fcbench.json_values import json_type_name
from fcbench.sample import Tool

# annotation names -> JSON Schema (the source spelling is kept when it differs)
_NAMED: dict[str, dict[str, Any]] = {
    "int": {"type": "integer"}, "float": {"type": "number"}, "complex": {"type": "number"},
    "str": {"type": "string"}, "bytes": {"type": "string"}, "bool": {"type": "boolean"},
    "None": {"type": "null"}, "NoneType": {"type": "null"},
    "dict": {"type": "object"}, "Dict": {"type": "object"}, "Mapping": {"type": "object"},
    "MutableMapping": {"type": "object"}, "object": {},
    "list": {"type": "array"}, "List": {"type": "array"}, "Sequence": {"type": "array"},
    "Iterable": {"type": "array"}, "Collection": {"type": "array"}, "tuple": {"type": "array"},
    "Tuple": {"type": "array"}, "set": {"type": "array"}, "Set": {"type": "array"},
    "frozenset": {"type": "array"}, "FrozenSet": {"type": "array"}, "Any": {},
}
_ARRAYS = frozenset({"list", "List", "Sequence", "Iterable", "Collection", "set", "Set", "frozenset", "FrozenSet"})
_MAPPINGS = frozenset({"dict", "Dict", "Mapping", "MutableMapping"})
_GOOGLE_ARGS = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$")
_GOOGLE_RETURNS = re.compile(r"^(Returns?|Yields?)\s*:\s*$")
_GOOGLE_OTHER = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")  # Raises:, Examples:, Note: ... end a section
_GOOGLE_ENTRY = re.compile(r"^(?P<name>\*{0,2}\w+)\s*(?:\((?P<type>[^)]*)\))?\s*:\s*(?P<text>.*)$")
_GOOGLE_RETURN_ENTRY = re.compile(r"^(?:\w+\s*\((?P<named_type>[^)]*)\)|(?P<type>[\w\[\], .|]+?))\s*:\s*(?P<text>.+)$")
_REST_FIELD = re.compile(r"^:(?P<kind>param|parameter|arg|argument|type|returns?|rtype)(?:\s+(?:[^:]*\s)?(?P<name>\w+))?\s*:\s*(?P<text>.*)$")


@dataclass(frozen=True)
class PythonImport:
    """What a module gave: one tool per public function, and the functions it left out (private)."""

    module: str
    tools: list[Tool]


def tools_from_python(path: Path) -> PythonImport:
    """The module's tools; a UserError (naming the function and the parameter) for anything that
    cannot become a typed tool."""
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the module ({exc})") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise UserError(f"{path}:{exc.lineno}: not valid Python ({exc.msg})") from None
    reader = _ModuleTypes(tree, source)
    functions = _public_functions(tree, path)
    if not functions:
        raise UserError(f"{path}: no public function (a top-level `def` whose name does not start with '_')")
    return PythonImport(str(path), [_tool(function, reader, path) for function in functions])


def _public_functions(tree: ast.Module, path: Path) -> list[ast.FunctionDef]:
    defined = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    exported = _literal_all(tree)
    if exported is None:
        chosen = [node for name, node in defined.items() if not name.startswith("_")]
    else:
        missing = [name for name in exported if name not in defined]
        if missing:
            raise UserError(f"{path}: __all__ names {missing[0]!r}, which is not a function defined in the module")
        chosen = [defined[name] for name in exported]
    for node in chosen:
        if isinstance(node, ast.AsyncFunctionDef):
            raise UserError(f"{path}:{node.lineno}: function {node.name!r} is async; tools are plain functions")
    return [node for node in chosen if isinstance(node, ast.FunctionDef)]


def _literal_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return [str(name) for name in value]
    return None


# ------------------------------------------------------------------------------ one function
def _tool(function: ast.FunctionDef, types: _ModuleTypes, path: Path) -> Tool:
    where = f"{path}:{function.lineno}: function {function.name!r}"
    arguments = function.args
    if arguments.posonlyargs:
        raise UserError(f"{where}: parameter {arguments.posonlyargs[0].arg!r} is positional-only; "
                        f"tools are called by keyword")
    if arguments.vararg or arguments.kwarg:
        star = f"*{arguments.vararg.arg}" if arguments.vararg else f"**{arguments.kwarg.arg}"  # type: ignore[union-attr]
        raise UserError(f"{where}: parameter {star!r} cannot become a JSON Schema property; name each parameter")
    docstring = parse_docstring(ast.get_docstring(function) or "")
    positional = arguments.args
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    pairs = list(zip(positional, defaults)) + list(zip(arguments.kwonlyargs, arguments.kw_defaults))
    properties: dict[str, Any] = {}
    required: list[str] = []
    for argument, default in pairs:
        if argument.annotation is None:
            raise UserError(f"{where}: parameter {argument.arg!r} has no type hint (each parameter's type "
                            f"becomes its JSON Schema; write e.g. `{argument.arg}: float`)")
        schema = types.schema(argument.annotation)
        described = docstring.parameters.get(argument.arg)
        if described:
            schema = {"description": described, **schema}
        if default is None:
            required.append(argument.arg)
        else:
            try:
                schema["default"] = ast.literal_eval(default)
            except ValueError:  # a computed default (math.e): the function supplies it
                schema["x-python-default"] = ast.unparse(default)
        properties[argument.arg] = schema
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    returns = _returns(function, types, docstring, where)
    return Tool(name=function.name, description=docstring.summary, parameters=parameters, returns=returns,
                meta={"python": {"module": path.name, "line": function.lineno}})


def _returns(function: ast.FunctionDef, types: _ModuleTypes, docstring: Docstring, where: str) -> dict[str, Any]:
    if function.returns is not None:
        schema = types.schema(function.returns)
    elif docstring.returns_type:  # `:rtype:` or `Returns: float: ...` stands in for the hint
        schema = schema_for_type_text(docstring.returns_type)
    else:
        raise UserError(f"{where}: no return type hint (write `-> float`, `-> dict[str, float]` or a TypedDict)")
    return {"description": docstring.returns, **schema} if docstring.returns else schema


# ------------------------------------------------------------------------------- annotations
class _ModuleTypes:
    """Annotation source -> JSON Schema, knowing the module's aliases and TypedDicts."""

    def __init__(self, tree: ast.Module, source: str) -> None:
        self.aliases: dict[str, ast.expr] = {}
        self.typed_dicts: dict[str, ast.ClassDef] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.aliases[node.targets[0].id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None \
                    and ast.unparse(node.annotation).endswith("TypeAlias"):
                self.aliases[node.target.id] = node.value
            elif isinstance(node, ast.ClassDef) and any(ast.unparse(base).endswith("TypedDict") for base in node.bases):
                self.typed_dicts[node.name] = node

    def schema(self, node: ast.expr, seen: set[str] | None = None) -> dict[str, Any]:
        text = ast.unparse(node)
        if isinstance(node, ast.Name) and node.id in self.aliases:  # `Number` says less than `int | float`
            text = ast.unparse(self.aliases[node.id])
        schema = self._schema(node, seen or set())
        if schema.get("type") != text and SOURCE_TYPE_KEY not in schema:
            schema[SOURCE_TYPE_KEY] = text
        return schema

    def _schema(self, node: ast.expr, seen: set[str]) -> dict[str, Any]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a quoted annotation
            try:
                return self._schema(ast.parse(node.value, mode="eval").body, seen)
            except SyntaxError:
                return schema_for_type_text(node.value)
        if isinstance(node, ast.Constant) and node.value is None:
            return {"type": "null"}
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):  # `int or float`, as written
            return _any_of([self._schema(value, seen) for value in node.values])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return _any_of([self._schema(node.left, seen), self._schema(node.right, seen)])
        if isinstance(node, ast.Subscript):
            return self._generic(node, seen)
        name = _name(node)
        if name in self.typed_dicts and name not in seen:
            return self._typed_dict(self.typed_dicts[name], seen | {name})
        if name in self.aliases and name not in seen:
            return self._schema(self.aliases[name], seen | {name})
        if name in _NAMED:
            return dict(_NAMED[name])
        return {}  # a class of its own (pd.DataFrame): any value, the source spelling kept

    def _generic(self, node: ast.Subscript, seen: set[str]) -> dict[str, Any]:
        outer = _name(node.value)
        items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if outer == "Optional":
            return _any_of([self._schema(items[0], seen), {"type": "null"}])
        if outer == "Union":
            return _any_of([self._schema(item, seen) for item in items])
        if outer == "Literal":
            values = [ast.literal_eval(item) for item in items]
            kinds = list(dict.fromkeys(json_type_name(value) for value in values))
            return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}
        if outer == "Annotated":
            return self._schema(items[0], seen)
        if outer in _ARRAYS:
            return {"type": "array", "items": self._schema(items[0], seen)}
        if outer in ("tuple", "Tuple"):
            if len(items) == 2 and isinstance(items[1], ast.Constant) and items[1].value is Ellipsis:
                return {"type": "array", "items": self._schema(items[0], seen)}
            return {"type": "array", "prefixItems": [self._schema(item, seen) for item in items],
                    "minItems": len(items), "maxItems": len(items)}
        if outer in _MAPPINGS:
            value = self._schema(items[-1], seen) if len(items) == 2 else {}
            return {"type": "object", "additionalProperties": value} if value else {"type": "object"}
        return {}

    def _typed_dict(self, node: ast.ClassDef, seen: set[str]) -> dict[str, Any]:
        properties = {}
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                properties[item.target.id] = self.schema(item.annotation, seen)
        described = parse_docstring(ast.get_docstring(node) or "")
        for key, text in described.parameters.items():  # `Attributes:` / `:param:` text per key
            if key in properties:
                properties[key] = {"description": text, **properties[key]}
        total = not any(isinstance(k, ast.keyword) and k.arg == "total" and isinstance(k.value, ast.Constant)
                        and k.value.value is False for k in node.keywords)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if total and properties:
            schema["required"] = list(properties)
        return schema


def _name(node: ast.expr) -> str:
    """`typing.List` and `List` alike: the last dotted part."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ast.unparse(node)


def _any_of(alternatives: list[dict[str, Any]]) -> dict[str, Any]:
    """Plain type alternatives merge into one `type` list; anything richer stays an `anyOf`."""
    flat: list[dict[str, Any]] = []
    for alternative in alternatives:
        flat.extend(alternative["anyOf"] if set(alternative) == {"anyOf"} else [alternative])
    if any(not alternative for alternative in flat):
        return {}  # one alternative is "any value"
    if all(set(alt) == {"type"} for alt in flat):
        types: list[str] = []
        for alt in flat:
            for kind in alt["type"] if isinstance(alt["type"], list) else [alt["type"]]:
                if kind not in types:
                    types.append(kind)
        return {"type": types if len(types) > 1 else types[0]}
    return {"anyOf": flat}


# --------------------------------------------------------------------------------- docstrings
@dataclass(frozen=True)
class Docstring:
    summary: str
    parameters: dict[str, str]
    returns: str
    returns_type: str


def _is_type_text(text: str) -> bool:
    """`int`, `int or float`, `List[float]`: words a type is written in, not a sentence."""
    return bool(schema_for_type_text(text).get("type")) or bool(schema_for_type_text(text).get("anyOf"))


def parse_docstring(text: str) -> Docstring:
    """Summary, parameter texts and the return text of a reST (`:param x:`) or Google (`Args:`)
    docstring; continuation lines join their entry."""
    lines = text.expandtabs().splitlines()
    summary_lines: list[str] = []
    for line in lines:
        if not line.strip() or _GOOGLE_ARGS.match(line.strip()) or _GOOGLE_RETURNS.match(line.strip()) \
                or line.strip().startswith(":"):
            break
        summary_lines.append(line.strip())
    parameters: dict[str, str] = {}
    returns: list[str] = []
    returns_type = ""
    section = ""
    current: tuple[str, str] | None = None  # (where the text goes, parameter name)
    entry_indent = 0
    for line in lines[len(summary_lines):]:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        rest = _REST_FIELD.match(stripped)
        if rest:
            kind, name, field_text = rest.group("kind"), rest.group("name"), rest.group("text").strip()
            section, current = "rest", None
            if kind in ("param", "parameter", "arg", "argument") and name:
                parameters[name] = field_text
                current = ("param", name)
            elif kind in ("return", "returns"):
                returns = [field_text]
                current = ("returns", "")
            elif kind == "rtype":
                returns_type = field_text
            continue
        if _GOOGLE_ARGS.match(stripped):
            section, current = "args", None
            continue
        if _GOOGLE_RETURNS.match(stripped):
            section, current = "returns", ("returns", "")
            entry_indent = -1
            continue
        if _GOOGLE_OTHER.match(stripped) and section in ("args", "returns") and indent == 0:
            section, current = "", None
            continue
        if not stripped:
            continue
        if section == "args":
            entry = _GOOGLE_ENTRY.match(stripped)
            if entry and (current is None or indent <= entry_indent):
                parameters[entry.group("name").lstrip("*")] = entry.group("text").strip()
                current, entry_indent = ("param", entry.group("name").lstrip("*")), indent
            elif current is not None:
                parameters[current[1]] = f"{parameters[current[1]]} {stripped}".strip()
        elif section == "returns":
            if entry_indent == -1:  # the first line may be `float: the text`
                entry_indent = indent
                typed = _GOOGLE_RETURN_ENTRY.match(stripped)
                kind = typed and (typed.group("named_type") or typed.group("type")).strip()
                if typed and kind and _is_type_text(kind):  # `float: text` or `result (float): text`
                    returns_type = kind
                    stripped = typed.group("text")
            returns.append(stripped)
        elif section == "rest" and current is not None and indent > 0:
            if current[0] == "param":
                parameters[current[1]] = f"{parameters[current[1]]} {stripped}".strip()
            else:
                returns.append(stripped)
    return Docstring(" ".join(summary_lines), parameters, " ".join(returns).strip(), returns_type)
