"""Evaluate the static functions of a GDScript file, from gdtoolkit's parse tree.

Godot cannot be installed on the CI machines, so the Godot addon's protocol logic
(``protocol/clients/godot/addons/credence/credence_protocol.gd``: pure static functions over
Dictionaries, Arrays, Strings and numbers) is run here instead, by a small interpreter for the
subset of GDScript that file is written in: constants and enums, static functions with typed
or untyped arguments and defaults, ``var``, assignment, ``if``/``elif``/``else``, ``for``,
``while``, ``return``, the arithmetic, comparison, boolean, ``in`` and ``is`` operators, the
ternary, literals, subscripts, and the built-in functions and Array/Dictionary/String methods
listed below. Anything outside the subset raises :class:`Unsupported`, so a test fails loudly
rather than running something else than the GDScript says.

It also runs classes (``class_name`` scripts with members, signals, instance methods,
property getters and lambdas) inside a :class:`Runtime` that holds every class of a folder
and the engine objects a test provides (a fake ``WebSocketPeer``, ``JSON``, ``Time``), so
the addon's node scripts can be driven against a real sidecar too.

Values map to Python as Godot's do: Dictionary → ``dict`` (insertion order, by reference),
Array → ``list`` (by reference), String → ``str``, int → ``int``, float → ``float``, bool,
null → ``None``. A typed argument or variable converts as Godot converts it on assignment
(``int`` ← ``12.0`` gives ``12``; ``float`` ← ``3`` gives ``3.0``).
"""

from __future__ import annotations

import ast
import copy
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gdtoolkit.parser import parser
from lark import Token, Tree

__all__ = ["GDScript", "Instance", "Runtime", "Signal", "Unsupported"]


class Unsupported(Exception):
    """A construct outside the subset this interpreter evaluates."""


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _gd_str(value: Any) -> str:
    """Godot 4's ``str()``: ``true``, ``<null>``, whole floats without a fraction."""
    if value is None:
        return "<null>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _is(value: Any, type_name: str) -> bool:
    checks: dict[str, Callable[[Any], bool]] = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, float),
        "bool": lambda v: isinstance(v, bool),
        "String": lambda v: isinstance(v, str),
        "Array": lambda v: isinstance(v, list),
        "Dictionary": lambda v: isinstance(v, dict),
    }
    if type_name not in checks:
        raise Unsupported(f"is {type_name}")
    return checks[type_name](value)


def _convert(value: Any, type_name: str | None) -> Any:
    """What a value becomes when assigned to a variable or argument of ``type_name``."""
    if type_name == "int" and isinstance(value, float):
        return int(value)
    if type_name == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _format(template: str, values: Any) -> str:
    """GDScript's ``"…%s…%d…" % value_or_array``."""
    items = list(values) if isinstance(values, list) else [values]
    out, i = [], 0
    for piece in re.split(r"(%[sd%])", template):
        if piece == "%%":
            out.append("%")
        elif piece == "%s":
            out.append(_gd_str(items[i]))
            i += 1
        elif piece == "%d":
            out.append(str(int(items[i])))
            i += 1
        else:
            out.append(piece)
    if i != len(items):
        raise ValueError(f"{len(items)} values for {i} placeholders in {template!r}")
    return "".join(out)


def _number(text: str) -> int | float:
    clean = text.replace("_", "")
    if clean.lower().startswith(("0x", "-0x")):
        return int(clean, 16)
    if any(c in clean for c in ".eE") and not clean.lower().startswith("0b"):
        return float(clean)
    return int(clean)


_BUILTINS: dict[str, Callable[..., Any]] = {
    "len": len,
    "str": lambda *parts: "".join(_gd_str(p) for p in parts),
    "int": lambda v: int(v),
    "float": lambda v: float(v),
    "floor": lambda v: float(math.floor(v)),
    "ceil": lambda v: float(math.ceil(v)),
    "absf": lambda v: abs(float(v)),
    "absi": lambda v: abs(int(v)),
    "abs": abs,
    "maxi": lambda a, b: max(int(a), int(b)),
    "mini": lambda a, b: min(int(a), int(b)),
    "maxf": lambda a, b: max(float(a), float(b)),
    "minf": lambda a, b: min(float(a), float(b)),
    "max": max,
    "min": min,
    "pow": lambda a, b: float(a) ** float(b),
    "range": lambda *a: list(range(*a)),
    "Array": lambda v=None: list(v or []),
    "PackedStringArray": lambda v=None: list(v or []),
}


def _sorted_in_place(items: list[Any]) -> None:
    items.sort()


def _merge(target: dict[Any, Any], other: dict[Any, Any], overwrite: bool = False) -> None:
    for key, value in other.items():
        if overwrite or key not in target:
            target[key] = value


def _erase_first(items: list[Any], value: Any) -> None:
    if value in items:
        items.remove(value)


_METHODS: dict[type, dict[str, Callable[..., Any]]] = {
    dict: {
        "get": lambda d, k, default=None: d.get(k, default),
        "has": lambda d, k: k in d,
        "keys": lambda d: list(d.keys()),
        "values": lambda d: list(d.values()),
        "erase": lambda d, k: d.pop(k, None) is not None,
        "duplicate": lambda d, deep=False: copy.deepcopy(d) if deep else dict(d),
        "is_empty": lambda d: not d,
        "size": len,
        "merge": _merge,
        "clear": lambda d: d.clear(),
    },
    list: {
        "append": lambda a, v: a.append(v),
        "push_back": lambda a, v: a.append(v),
        "append_array": lambda a, v: a.extend(v),
        "size": len,
        "is_empty": lambda a: not a,
        "duplicate": lambda a, deep=False: copy.deepcopy(a) if deep else list(a),
        "sort": _sorted_in_place,
        "has": lambda a, v: v in a,
        "erase": _erase_first,
        "pop_front": lambda a: a.pop(0) if a else None,
        "pop_back": lambda a: a.pop() if a else None,
        "front": lambda a: a[0] if a else None,
        "back": lambda a: a[-1] if a else None,
        "clear": lambda a: a.clear(),
        "assign": lambda a, v: a.__setitem__(slice(None), list(v)),
    },
    str: {
        "begins_with": lambda s, p: s.startswith(p),
        "ends_with": lambda s, p: s.endswith(p),
        "substr": lambda s, start, length=-1: (
            s[start:] if length < 0 else s[start : start + length]
        ),
        "length": len,
        "strip_edges": lambda s: s.strip(" \t\n\r\v\f"),
        "is_empty": lambda s: not s,
        "to_utf8_buffer": lambda s: s.encode("utf-8"),
    },
    bytes: {
        "get_string_from_utf8": lambda b: b.decode("utf-8", errors="replace"),
        "size": len,
    },
}


class Signal:
    """A signal of one instance: ``connect(callable)``, ``emit(*args)`` calls each in order."""

    def __init__(self, owner: Any, name: str) -> None:
        self.owner, self.name = owner, name
        self.targets: list[Callable[..., Any]] = []

    def connect(self, target: Callable[..., Any]) -> int:
        self.targets.append(target)
        return 0

    def emit(self, *args: Any) -> None:
        for target in list(self.targets):
            target(*args)


class GdCallable:
    """A Godot Callable: a bound method or a lambda; ``bind`` and ``call`` as in Godot."""

    def __init__(self, fn: Callable[..., Any], bound: tuple[Any, ...] = ()) -> None:
        self.fn, self.bound = fn, bound

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args, *self.bound)

    def call(self, *args: Any) -> Any:
        return self(*args)

    def bind(self, *args: Any) -> GdCallable:
        return GdCallable(self.fn, self.bound + args)


class Instance:
    """An object of a GDScript class: its members, signals and methods."""

    def __init__(self, script: GDScript, args: tuple[Any, ...]) -> None:
        self.script = script
        self.fields: dict[str, Any] = {}
        for name in script.signals:
            self.fields[name] = Signal(self, name)
        for name, type_name, default, _getter in script.members:
            value = script._eval(default, {"__self__": self}) if default is not None else None
            if value is None and type_name is not None:
                value = _zero(type_name)
            self.fields[name] = _convert(value, type_name)
        if "_init" in script.methods:
            script.invoke(self, "_init", *args)

    def get(self, name: str) -> Any:
        getter = self.script.getters.get(name)
        if getter is not None:
            try:
                self.script._block(getter, {"__self__": self})
            except _Return as ret:
                return ret.value
            return None
        if name in self.fields:
            return self.fields[name]
        if name in self.script.methods:
            return GdCallable(lambda *a, _n=name: self.script.invoke(self, _n, *a))
        if name in self.script.functions:
            return GdCallable(lambda *a, _n=name: self.script.call(_n, *a))
        raise Unsupported(f"{self.script.class_name}.{name}")

    def set(self, name: str, value: Any) -> None:
        types = {m[0]: m[1] for m in self.script.members}
        self.fields[name] = _convert(value, types.get(name))

    def call(self, name: str, *args: Any) -> Any:
        return self.script.invoke(self, name, *args)

    def __getitem__(self, name: str) -> Any:
        return self.get(name)


def _zero(type_name: str) -> Any:
    if type_name.startswith("Array"):
        return []
    return {"int": 0, "float": 0.0, "String": "", "bool": False, "Dictionary": {},
            "PackedStringArray": []}.get(type_name)  # fmt: skip


class Runtime:
    """Every class of a folder of scripts, and the engine's globals a test provides."""

    def __init__(self, folder: Path, engine: dict[str, Any]) -> None:
        self.engine = engine
        self.classes: dict[str, GDScript] = {}
        for path in sorted(folder.rglob("*.gd")):
            script = GDScript(path, runtime=self)
            if script.class_name:
                self.classes[script.class_name] = script

    def new(self, class_name: str, *args: Any) -> Instance:
        return Instance(self.classes[class_name], args)


class _Function:
    def __init__(self, name: str, args: list[tuple[str, str | None, Tree | None]], body: list[Any]):
        self.name = name
        self.args = args
        self.body = body


class GDScript:
    """A parsed GDScript file whose static functions can be called: ``script.call("f", 1)``."""

    def __init__(self, path: Path, runtime: Runtime | None = None) -> None:
        self.path = path
        self.runtime = runtime
        self.tree = parser.parse(path.read_text(encoding="utf-8"))
        self.constants: dict[str, Any] = {}
        self.enums: dict[str, dict[str, int]] = {}
        self.functions: dict[str, _Function] = {}
        self.methods: dict[str, _Function] = {}
        self.signals: list[str] = []
        self.members: list[tuple[str, str | None, Any, Any]] = []
        self.getters: dict[str, list[Any]] = {}
        self.class_name: str | None = None
        for stmt in self.tree.children:
            self._declare(stmt)

    # ------------------------------------------------------------------ declarations

    def _declare(self, stmt: Any) -> None:
        kind = stmt.data if isinstance(stmt, Tree) else None
        if kind == "classname_stmt":
            self.class_name = str(stmt.children[0])
        elif kind in ("extends_stmt", "annotation"):
            pass
        elif kind == "signal_stmt":
            self.signals.append(str(stmt.children[0]))
        elif kind == "class_var_stmt":
            var = stmt.children[0]
            kids = var.children
            if var.data == "class_var_inf" or var.data == "class_var_assigned":
                self.members.append((str(kids[0]), None, kids[1], None))
            elif var.data == "class_var_typed_assgnd":
                self.members.append((str(kids[0]), str(kids[1]), kids[2], None))
            elif var.data == "class_var_typed":
                self.members.append((str(kids[0]), str(kids[1]), None, None))
            else:
                raise Unsupported(f"member form {var.data}")
        elif kind == "property_body_def":
            getter = stmt.children[0]
            if getter.data != "property_custom_getter":
                raise Unsupported(f"property {getter.data}")
            self.getters[self.members[-1][0]] = getter.children[1:]
        elif kind == "const_stmt":
            inner = stmt.children[0]
            name, expr = str(inner.children[0]), inner.children[-1]
            self.constants[name] = self._eval(expr, {})
        elif kind == "enum_stmt":
            named = stmt.children[0]
            if named.data != "enum_named":
                raise Unsupported("an unnamed enum")
            members: dict[str, int] = {}
            for element in named.children[1].children:
                if isinstance(element, Tree) and element.data == "enum_element":
                    value = len(members) if len(element.children) == 1 else None
                    if value is None:
                        value = self._eval(element.children[1], {})
                    members[str(element.children[0])] = value
            self.enums[str(named.children[0])] = members
        elif kind == "static_func_def":
            self._function(stmt.children[0], self.functions)
        elif kind == "func_def":
            self._function(stmt, self.methods)
        else:
            raise Unsupported(f"top-level {kind or stmt!r}")

    def _function(self, func_def: Tree, into: dict[str, _Function]) -> None:
        header = func_def.children[0]
        name = str(header.children[0])
        into[name] = _Function(name, self._args(header.children[1:]), func_def.children[1:])

    @staticmethod
    def _args(parts: list[Any]) -> list[tuple[str, str | None, Tree | None]]:
        args: list[tuple[str, str | None, Tree | None]] = []
        for part in parts:
            if isinstance(part, Tree) and part.data == "func_args":
                for arg in part.children:
                    if not isinstance(arg, Tree):
                        continue
                    kids = arg.children
                    if arg.data == "func_arg_regular":
                        args.append((str(kids[0]), None, None))
                    elif arg.data == "func_arg_inf":
                        args.append((str(kids[0]), None, kids[1]))
                    elif arg.data == "func_arg_typed":
                        args.append(
                            (str(kids[0]), str(kids[1]), kids[2] if len(kids) > 2 else None)
                        )
                    else:
                        raise Unsupported(f"argument {arg.data}")
        return args

    # ------------------------------------------------------------------ calling

    def call(self, name: str, *args: Any) -> Any:
        """Call the static function ``name`` with ``args`` (defaults filled in)."""
        return self._run(self.functions[name], {}, args)

    def invoke(self, this: Instance, name: str, *args: Any) -> Any:
        """Call the instance method ``name`` of ``this``."""
        return self._run(self.methods[name], {"__self__": this}, args)

    def _run(self, fn: _Function, scope: dict[str, Any], args: tuple[Any, ...]) -> Any:
        name = fn.name
        if len(args) > len(fn.args):
            raise TypeError(f"{name}() takes at most {len(fn.args)} arguments")
        for i, (arg, type_name, default) in enumerate(fn.args):
            if i < len(args):
                value = args[i]
            elif default is not None:
                value = self._eval(default, scope)
            else:
                raise TypeError(f"{name}() missing argument {arg!r}")
            scope[arg] = _convert(value, type_name)
        try:
            self._block(fn.body, scope)
        except _Return as ret:
            return ret.value
        return None

    # ------------------------------------------------------------------ statements

    def _block(self, statements: list[Any], scope: dict[str, Any]) -> None:
        for stmt in statements:
            self._statement(stmt, scope)

    def _statement(self, stmt: Any, scope: dict[str, Any]) -> None:
        kind = stmt.data if isinstance(stmt, Tree) else None
        if kind == "func_var_stmt":
            var = stmt.children[0]
            kids = var.children if isinstance(var, Tree) else []
            if var.data == "func_var_empty":
                scope[str(kids[0])] = None
            elif var.data == "func_var_typed":
                scope[str(kids[0])] = {"int": 0, "float": 0.0, "String": "", "bool": False}.get(
                    str(kids[1])
                )
            elif var.data in ("func_var_inf", "func_var_assigned"):
                scope[str(kids[0])] = self._eval(kids[1], scope)
            elif var.data == "func_var_typed_assgnd":
                scope[str(kids[0])] = _convert(self._eval(kids[2], scope), str(kids[1]))
            else:
                raise Unsupported(f"var form {var.data}")
        elif kind == "expr_stmt":
            self._eval(stmt.children[0], scope)
        elif kind == "return_stmt":
            raise _Return(self._eval(stmt.children[0], scope) if stmt.children else None)
        elif kind == "if_stmt":
            for branch in stmt.children:
                if branch.data == "else_branch":
                    self._block(branch.children, scope)
                    return
                if self._truthy(self._eval(branch.children[0], scope)):
                    self._block(branch.children[1:], scope)
                    return
        elif kind == "for_stmt":
            name, iterable = str(stmt.children[0]), self._eval(stmt.children[1], scope)
            if isinstance(iterable, int) and not isinstance(iterable, bool):
                iterable = range(iterable)
            for item in list(iterable):
                scope[name] = item
                try:
                    self._block(stmt.children[2:], scope)
                except _Break:
                    break
                except _Continue:
                    continue
        elif kind == "while_stmt":
            while self._truthy(self._eval(stmt.children[0], scope)):
                try:
                    self._block(stmt.children[1:], scope)
                except _Break:
                    break
                except _Continue:
                    continue
        elif kind == "pass_stmt":
            pass
        elif kind == "break_stmt":
            raise _Break
        elif kind == "continue_stmt":
            raise _Continue
        else:
            raise Unsupported(f"statement {kind or stmt!r}")

    # ------------------------------------------------------------------ expressions

    @staticmethod
    def _truthy(value: Any) -> bool:
        return bool(value)

    def _name(self, name: str, scope: dict[str, Any]) -> Any:
        if name in scope:
            return scope[name]
        this = scope.get("__self__")
        if name == "self" and this is not None:
            return this
        if this is not None and (
            name in this.fields or name in self.getters or name in self.methods
        ):
            return this.get(name)
        if name in self.constants:
            return self.constants[name]
        if name in self.enums:
            return self.enums[name]
        if name in self.functions:
            return GdCallable(lambda *a: self.call(name, *a))
        if self.runtime is not None:
            if name in self.runtime.classes:
                return self.runtime.classes[name]
            if name in self.runtime.engine:
                return self.runtime.engine[name]
        literals = {"null": None, "true": True, "false": False, "PI": math.pi, "INF": math.inf}
        if name in literals:
            return literals[name]
        raise Unsupported(f"unknown name {name!r}")

    def _eval(self, node: Any, scope: dict[str, Any]) -> Any:
        if isinstance(node, Token):
            if node.type == "NAME":
                return self._name(str(node), scope)
            if node.type == "NUMBER":
                return _number(str(node))
            if node.type in ("REGULAR_STRING", "LONG_STRING"):
                return ast.literal_eval(str(node))
            raise Unsupported(f"token {node.type} {node!s}")
        kind = node.data
        kids = node.children
        handler = getattr(self, f"_x_{kind}", None)
        if handler is None:
            raise Unsupported(f"expression {kind}")
        return handler(kids, scope)

    def _x_expr(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        return self._eval(kids[0], scope)

    _x_par_expr = _x_expr

    def _x_string(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        return ast.literal_eval(str(kids[0]))

    def _x_array(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        return [
            self._eval(k, scope)
            for k in kids
            if not (isinstance(k, Tree) and k.data == "trailing_comma")
        ]

    def _x_dict(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        out: dict[Any, Any] = {}
        for element in kids:
            if isinstance(element, Tree) and element.data == "c_dict_element":
                out[self._eval(element.children[0], scope)] = self._eval(element.children[1], scope)
            elif isinstance(element, Tree) and element.data == "eq_dict_element":
                out[str(element.children[0])] = self._eval(element.children[1], scope)
            elif not (isinstance(element, Tree) and element.data == "trailing_comma"):
                raise Unsupported(f"dict element {element!r}")
        return out

    def _x_comparison(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        ops: dict[str, Callable[[Any, Any], bool]] = {
            "==": lambda a, b: a == b,
            "!=": lambda a, b: a != b,
            "<": lambda a, b: a < b,
            ">": lambda a, b: a > b,
            "<=": lambda a, b: a <= b,
            ">=": lambda a, b: a >= b,
        }
        left = self._eval(kids[0], scope)
        for i in range(1, len(kids), 2):
            right = self._eval(kids[i + 1], scope)
            if not ops[str(kids[i])](left, right):
                return False
            left = right
        return True

    _x_asless_comparison = _x_comparison

    def _x_and_test(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        return all(self._truthy(self._eval(k, scope)) for k in kids[::2])

    _x_asless_and_test = _x_and_test

    def _x_or_test(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        return any(self._truthy(self._eval(k, scope)) for k in kids[::2])

    _x_asless_or_test = _x_or_test

    def _x_not_test(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        return not self._truthy(self._eval(kids[-1], scope))

    _x_asless_actual_not_test = _x_not_test
    _x_actual_not_test = _x_not_test

    def _x_content_test(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        item, container = self._eval(kids[0], scope), self._eval(kids[-1], scope)
        negated = any(
            (isinstance(k, Tree) and k.data == "not_in_op") or str(k) == "not" for k in kids[1:-1]
        )
        return (item not in container) if negated else (item in container)

    _x_asless_content_test = _x_content_test

    def _x_type_test(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        negated = any(str(k) == "not" for k in kids[1:-1])
        result = _is(self._eval(kids[0], scope), str(kids[-1]))
        return not result if negated else result

    _x_asless_type_test = _x_type_test

    def _x_arith_expr(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        value = self._eval(kids[0], scope)
        for i in range(1, len(kids), 2):
            right = self._eval(kids[i + 1], scope)
            value = value + right if str(kids[i]) == "+" else value - right
        return value

    _x_asless_arith_expr = _x_arith_expr

    def _x_mdr_expr(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        value = self._eval(kids[0], scope)
        for i in range(1, len(kids), 2):
            right, op = self._eval(kids[i + 1], scope), str(kids[i])
            if op == "*":
                value = value * right
            elif op == "/":
                both_int = isinstance(value, int) and isinstance(right, int)
                value = int(value / right) if both_int else value / right
            elif op == "%" and isinstance(value, str):
                value = _format(value, right)
            elif op == "%":
                value = math.fmod(value, right) if isinstance(value, float) else value % right
            else:
                raise Unsupported(f"operator {op}")
        return value

    _x_asless_mdr_expr = _x_mdr_expr

    def _x_neg_expr(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        value = self._eval(kids[-1], scope)
        return -value if str(kids[0]) == "-" else value

    _x_asless_actual_neg_expr = _x_neg_expr
    _x_actual_neg_expr = _x_neg_expr

    def _x_test_expr(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        if self._truthy(self._eval(kids[2], scope)):
            return self._eval(kids[0], scope)
        return self._eval(kids[4], scope)

    _x_asless_test_expr = _x_test_expr

    def _x_subscr_expr(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        container, key = self._eval(kids[0], scope), self._eval(kids[1], scope)
        if isinstance(container, dict) and key not in container:
            raise KeyError(f"invalid key {key!r} (Godot: 'Invalid access to property or key')")
        return container[key]

    def _attr(self, target: Any, name: str) -> Any:
        """``target.name`` (no call): a member, a constant, a signal, a method as a Callable."""
        if isinstance(target, Instance):
            return target.get(name)
        if isinstance(target, GDScript):
            if name in target.constants:
                return target.constants[name]
            if name in target.enums:
                return target.enums[name]
            if name == "new":
                return GdCallable(lambda *a: Instance(target, a))
            if name in target.functions:
                return GdCallable(lambda *a: target.call(name, *a))
            raise Unsupported(f"{target.class_name}.{name}")
        if isinstance(target, dict):
            return target[name]
        if name == "call_deferred" and callable(target):
            assert self.runtime is not None  # run by the test's frame loop, as Godot idles
            return lambda *a: self.runtime.engine["__deferred__"].append((target, a))
        if isinstance(target, Signal | GdCallable):
            return getattr(target, name)
        methods = _METHODS.get(type(target))
        if methods is not None and name in methods:
            return lambda *a: methods[name](target, *a)
        if isinstance(target, int | float | str | bool | list | bytes) or target is None:
            raise Unsupported(f"attribute {name} of {type(target).__name__}")
        return getattr(target, name)  # an engine object the test provides

    def _chain(self, kids: list[Any], scope: dict[str, Any], upto: int) -> Any:
        """The value of ``a.b.c`` (flat: a, '.', b, '.', c), stopping before name ``upto``."""
        value = self._eval(kids[0], scope)
        names = [str(k) for k in kids[2::2]]
        for name in names[:upto]:
            value = self._attr(value, name)
        return value

    def _x_getattr(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        return self._chain(kids, scope, len(kids[2::2]))

    def _x_lambda(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        header = kids[0]
        fn = _Function("<lambda>", self._args(header.children), kids[1:])
        captured = dict(scope)  # Godot lambdas capture locals by value
        return GdCallable(lambda *a: self._run(fn, dict(captured), a))

    def _x_shift_expr(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        value = self._eval(kids[0], scope)
        for i in range(1, len(kids), 2):
            right = self._eval(kids[i + 1], scope)
            value = value << right if str(kids[i]) == "<<" else value >> right
        return value

    _x_asless_shift_expr = _x_shift_expr

    def _x_standalone_call(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        name = str(kids[0])
        args = [self._eval(k, scope) for k in kids[1:]]
        this = scope.get("__self__")
        if isinstance(scope.get(name), GdCallable):
            return scope[name](*args)
        if this is not None and name in self.methods:
            return self.invoke(this, name, *args)
        if name in self.functions:
            return self.call(name, *args)
        if name in _BUILTINS:
            return _BUILTINS[name](*args)
        if self.runtime is not None and callable(self.runtime.engine.get(name)):
            return self.runtime.engine[name](*args)
        raise Unsupported(f"function {name}()")

    def _x_getattr_call(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        chain, args_nodes = kids[0].children, kids[1:]
        method = str(chain[-1])
        args = [self._eval(k, scope) for k in args_nodes]
        target = self._chain(chain, scope, len(chain[2::2]) - 1)
        if isinstance(target, Instance):
            if method in target.script.methods:
                return target.call(method, *args)
            if method in target.script.functions:
                return target.script.call(method, *args)
        methods = _METHODS.get(type(target))
        if methods is not None:
            if method not in methods:
                raise Unsupported(f"method {type(target).__name__}.{method}()")
            return methods[method](target, *args)
        return self._attr(target, method)(*args)

    def _x_assnmnt_expr(self, kids: list[Any], scope: dict[str, Any]) -> Any:
        target, op, value_node = kids
        value = self._eval(value_node, scope)
        op = str(op)
        if op != "=":
            current = self._eval(target, scope)
            value = {"+=": lambda: current + value, "-=": lambda: current - value}[op]()
        this = scope.get("__self__")
        if isinstance(target, Token):
            name = str(target)
            if name in scope or this is None:
                scope[name] = value
            else:
                this.set(name, value)  # a member (or a property the engine class has)
        elif target.data == "subscr_expr":
            self._eval(target.children[0], scope)[self._eval(target.children[1], scope)] = value
        elif target.data == "getattr":
            owner = self._chain(target.children, scope, len(target.children[2::2]) - 1)
            name = str(target.children[-1])
            if isinstance(owner, dict):
                owner[name] = value
            elif isinstance(owner, Instance):
                owner.set(name, value)
            else:
                setattr(owner, name, value)
        else:
            raise Unsupported(f"assignment to {target.data}")
        return None
