"""The AWS API calls each Lambda handler can make, read from the source with ``ast`` (never run).

icetide reaches AWS only through ``icetide.adapters.clients.client("<service>")`` (or, anywhere,
``boto3.client``). A call is found in these shapes, the ones the adapters use:

- ``client("dms").create_endpoint(...)``, or through a local name or a ``self.<attribute>`` (set
  in any method of the class) bound to ``client("dms")``;
- ``client("s3").get_paginator("list_objects_v2")`` (a paginator calls that operation);
- ``getattr(client("dms"), "describe_endpoints")`` with the operation as a literal;
- ``getattr(client("dms"), operation)`` or ``get_paginator(operation)`` where ``operation`` is a
  parameter: the function *forwards* it, and every call of it that passes a literal there (or its
  own parameter, forwarding further) makes that operation.

Any other use of a client (passed along, an operation computed at run time) raises UnreadableCall:
the reader must be taught the new shape rather than miss a call, since a missed call is a missing
permission found only in AWS.

What a handler can reach is over-approximated on purpose, so no call is lost: every function or
class its code *names* (called or passed along as a callback) is reachable, imported names are
followed to their module, and ``obj.method`` with a receiver the reader cannot type reaches every
method of that name in the code.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

CLIENT_FACTORIES = {("icetide.adapters.clients", "client"), ("boto3", "client")}
# Attributes of a client that are not operations.
_CLIENT_NON_OPERATIONS = {"exceptions", "meta"}
# boto3's other ways to reach AWS, which the reader does not follow.
_UNREAD_FACTORIES = {"boto3.resource", "boto3.Session", "boto3.session.Session"}
# Client methods that do not call an operation by their own name and are not read here.
_UNREAD_CLIENT_METHODS = {"get_waiter", "can_paginate", "generate_presigned_url", "generate_presigned_post"}
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


class UnreadableCall(Exception):
    """The code uses an AWS client in a shape this reader does not resolve."""


@dataclass(frozen=True, order=True)
class ApiCall:
    """One AWS operation as boto3 names it: client service and method (``dms``, ``create_endpoint``)."""

    service: str
    operation: str


FunctionKey = tuple[str, str]  # (module, qualified name: "f" or "Class.method")
# What a name refers to: ("function", module, qualname), ("class", module, name), ("module", dotted,
# ""), ("external", dotted, "") for code outside the index, ("method", "", name) for an attribute
# of a receiver the reader cannot type, ("unknown", "", "").
_Target = tuple[str, str, str]
MODULE_CODE = "<module>"


@dataclass
class _Function:
    module: str
    node: ast.AST  # a def, or the module's own statements (MODULE_CODE)
    params: list[str]
    calls: set[ApiCall] = field(default_factory=set)
    # parameter name -> the service whose operation it names
    forwards: dict[str, str] = field(default_factory=dict)


@dataclass
class _Module:
    name: str
    tree: ast.Module
    path: Path
    # local name -> ("module", dotted) or ("symbol", module, name)
    bindings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    functions: dict[str, _Function] = field(default_factory=dict)
    classes: dict[str, set[str]] = field(default_factory=dict)


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = node.args
    return [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]


class CodeIndex:
    """Every module of the packages under ``source_root`` (``functions/``), indexed for call reading."""

    def __init__(self, source_root: Path, extra_sources: dict[str, str] | None = None) -> None:
        self._modules: dict[str, _Module] = {}
        for path in sorted(source_root.rglob("*.py")):
            relative = path.relative_to(source_root).with_suffix("")
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            self._add(".".join(parts), path, path.read_text(encoding="utf-8"))
        # Synthetic modules (tests of this reader): module name -> source.
        for name, source in (extra_sources or {}).items():
            self._add(name, Path(f"<{name}>"), source)
        for module in self._modules.values():
            self._bind_imports(module)
        self._methods_by_name: dict[str, set[FunctionKey]] = {}
        for module in self._modules.values():
            for qualname in module.functions:
                if "." in qualname:
                    method = qualname.rpartition(".")[2]
                    self._methods_by_name.setdefault(method, set()).add((module.name, qualname))
        self._edges = {key: self._references(key) for key in self._all_functions()}
        self._read_calls()

    # --- indexing -----------------------------------------------------------------------------

    def _add(self, name: str, path: Path, source: str) -> None:
        tree = ast.parse(source, filename=str(path))
        module = _Module(name, tree, path)
        # The module's own statements (tables of callbacks, constants) as one pseudo-function that
        # each of its functions reaches: what they name is named for every function of the module.
        top_level: list[ast.stmt] = []
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                # A class's bases, decorators and attributes, not its methods (each is a function).
                top_level += [ast.Expr(expr) for expr in [*node.bases, *node.decorator_list]]
                top_level += [item for item in node.body if not isinstance(item, _DEFS)]
            elif not isinstance(node, _DEFS):
                top_level.append(node)
        module.functions[MODULE_CODE] = _Function(name, ast.Module(body=top_level, type_ignores=[]), [])
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                module.functions[node.name] = _Function(name, node, _parameters(node))
            elif isinstance(node, ast.ClassDef):
                methods = set()
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        qualname = f"{node.name}.{item.name}"
                        module.functions[qualname] = _Function(name, item, _parameters(item))
                        methods.add(item.name)
                module.classes[node.name] = methods
        self._modules[name] = module

    def _bind_imports(self, module: _Module) -> None:
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        module.bindings[alias.asname] = ("module", alias.name)
                    else:
                        top = alias.name.split(".")[0]
                        module.bindings[top] = ("module", top)
            elif isinstance(node, ast.ImportFrom) and node.module:
                base = node.module
                if node.level:
                    package = module.name.split(".")
                    # An __init__ module is its package; a plain module's package is its parent.
                    if module.path.name != "__init__.py":
                        package = package[:-1]
                    package = package[: len(package) - node.level + 1]
                    base = ".".join([*package, node.module])
                for alias in node.names:
                    local = alias.asname or alias.name
                    dotted = f"{base}.{alias.name}"
                    module.bindings[local] = (
                        ("module", dotted) if dotted in self._modules else ("symbol", base, alias.name)
                    )

    def _all_functions(self) -> Iterator[FunctionKey]:
        for module in self._modules.values():
            for qualname in module.functions:
                yield module.name, qualname

    def _function(self, key: FunctionKey) -> _Function:
        return self._modules[key[0]].functions[key[1]]

    # --- name resolution ----------------------------------------------------------------------

    def _symbol(self, module_name: str, name: str, seen: frozenset[str] = frozenset()) -> _Target:
        """What ``name`` in module ``module_name`` is (see _Target)."""
        module = self._modules.get(module_name)
        if module is None:
            return ("external", f"{module_name}.{name}", "")
        if name in module.functions:
            return ("function", module_name, name)
        if name in module.classes:
            return ("class", module_name, name)
        binding = module.bindings.get(name)
        if binding is None or module_name in seen:
            return ("unknown", "", "")
        if binding[0] == "module":
            return ("module" if binding[1] in self._modules else "external", binding[1], "")
        return self._symbol(binding[1], binding[2], seen | {module_name})

    def _resolve(self, module_name: str, node: ast.expr) -> _Target:
        """What a Name or an Attribute chain in ``module_name`` refers to (see :meth:`_symbol`)."""
        if isinstance(node, ast.Name):
            return self._symbol(module_name, node.id)
        if isinstance(node, ast.Attribute):
            owner = self._resolve(module_name, node.value)
            if owner[0] == "module":
                return self._symbol(owner[1], node.attr)
            if owner[0] == "external":
                return ("external", f"{owner[1]}.{node.attr}", "")
            if owner[0] == "class":
                qualname = f"{owner[2]}.{node.attr}"
                if qualname in self._modules[owner[1]].functions:
                    return ("function", owner[1], qualname)
            return ("method", "", node.attr)
        return ("unknown", "", "")

    def _references(self, key: FunctionKey) -> set[FunctionKey]:
        """Every function ``key``'s code names: called, constructed (a class's methods), or passed along."""
        module_name = key[0]
        found: set[FunctionKey] = set()
        for node in ast.walk(self._function(key).node):
            if not isinstance(node, ast.Name | ast.Attribute):
                continue
            target = self._resolve(module_name, node)
            if target[0] == "function":
                found.add((target[1], target[2]))
            elif target[0] == "class":
                # Constructing a class runs __init__ and __post_init__ (and a dataclass's nothing else).
                for method in ("__init__", "__post_init__"):
                    qualname = f"{target[2]}.{method}"
                    if qualname in self._modules[target[1]].functions:
                        found.add((target[1], qualname))
            elif target[0] == "external" and target[1] in _UNREAD_FACTORIES:
                raise UnreadableCall(f"{module_name}:{node.lineno}: {target[1]} is not read; use client()")
            elif target[0] == "method" and isinstance(node, ast.Attribute):
                found |= self._methods_by_name.get(node.attr, set())
        if key[1] != MODULE_CODE:
            found.add((module_name, MODULE_CODE))
        found.discard(key)
        return found

    # --- AWS calls ----------------------------------------------------------------------------

    def _client_service(self, module_name: str, node: ast.expr, aliases: dict[str, str]) -> str | None:
        """The service of the client ``node`` evaluates to, or None if it is not a client."""
        alias = _alias_name(node)
        if alias is not None and isinstance(getattr(node, "ctx", None), ast.Load) and alias in aliases:
            return aliases[alias]
        if not isinstance(node, ast.Call):
            return None
        target = self._resolve(module_name, node.func)
        factory = (
            (target[1], target[2])
            if target[0] == "function"
            else tuple(target[1].rsplit(".", 1))
            if target[0] == "external"
            else None
        )
        if factory not in CLIENT_FACTORIES:
            return None
        if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant):
            raise UnreadableCall(f"{module_name}:{node.lineno}: a client of a service named at run time")
        return str(node.args[0].value)

    def _self_aliases(self, module_name: str, class_name: str) -> dict[str, str]:
        """``self.<attr>`` -> service, for the clients any method of the class keeps on self."""
        found: dict[str, str] = {}
        for qualname, function in self._modules[module_name].functions.items():
            if qualname.startswith(f"{class_name}."):
                aliases = _aliases(function.node, lambda value: self._client_service(module_name, value, {}))
                found |= {name: service for name, service in aliases.items() if name.startswith("self.")}
        return found

    def _operation(
        self, function: _Function, service: str, node: ast.expr | None, where: str
    ) -> ApiCall | None:
        """The call an operation argument names (a literal), or None after recording a forward."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return ApiCall(service, node.value)
        if isinstance(node, ast.Name) and node.id in function.params:
            function.forwards[node.id] = service
            return None
        raise UnreadableCall(f"{where}: an operation of {service} computed at run time")

    def _read_direct(self, key: FunctionKey) -> None:
        if key in CLIENT_FACTORIES:
            return  # the factory itself builds clients of any service; its callers name the service
        function = self._function(key)
        module_name = key[0]
        parents = {
            child: parent for parent in ast.walk(function.node) for child in ast.iter_child_nodes(parent)
        }
        # A method sees the clients its class keeps on self (``self._client = client("dms")``).
        class_name = key[1].partition(".")[0] if "." in key[1] else None
        aliases = dict(self._self_aliases(module_name, class_name)) if class_name else {}
        aliases |= _aliases(function.node, lambda value: self._client_service(module_name, value, {}))
        for node in ast.walk(function.node):
            service = self._client_service(module_name, node, aliases) if isinstance(node, ast.expr) else None
            if service is None:
                continue
            where = f"{module_name}:{getattr(node, 'lineno', '?')}"
            parent = parents.get(node)
            if isinstance(node, ast.Call) and isinstance(parent, ast.Assign):
                if len(parent.targets) != 1 or _alias_name(parent.targets[0]) is None:
                    raise UnreadableCall(f"{where}: a client kept where the reader cannot follow it")
                continue  # the alias; its uses are read where they are
            if isinstance(parent, ast.Attribute):
                if parent.attr in _CLIENT_NON_OPERATIONS:
                    continue
                call = parents.get(parent)
                if (
                    not isinstance(call, ast.Call)
                    or call.func is not parent
                    or parent.attr in _UNREAD_CLIENT_METHODS
                ):
                    raise UnreadableCall(f"{where}: client attribute {parent.attr!r} used, not called")
                if parent.attr == "get_paginator":
                    found = self._operation(function, service, call.args[0] if call.args else None, where)
                else:
                    found = ApiCall(service, parent.attr)
            elif (
                isinstance(parent, ast.Call)
                and isinstance(parent.func, ast.Name)
                and parent.func.id == "getattr"
                and parent.args[0] is node
                and len(parent.args) == 2
            ):
                found = self._operation(function, service, parent.args[1], where)
            else:
                raise UnreadableCall(f"{where}: a client used other than by calling one of its operations")
            if found is not None:
                function.calls.add(found)

    def _read_forwarded(self, key: FunctionKey) -> bool:
        """Record the calls ``key`` makes through forwarding functions; True if anything was new."""
        function = self._function(key)
        before = (len(function.calls), len(function.forwards))
        for node in ast.walk(function.node):
            if not isinstance(node, ast.Call):
                continue
            target = self._resolve(key[0], node.func)
            if target[0] != "function":
                continue
            callee = self._function((target[1], target[2]))
            for param, service in list(callee.forwards.items()):
                where = f"{key[0]}:{node.lineno}"
                argument = _argument(callee, node, param)
                if argument is None:
                    raise UnreadableCall(f"{where}: {param} not given to {target[2]}")
                found = self._operation(function, service, argument, where)
                if found is not None:
                    function.calls.add(found)
        return (len(function.calls), len(function.forwards)) != before

    def _read_calls(self) -> None:
        for key in self._all_functions():
            self._read_direct(key)
        while any([self._read_forwarded(key) for key in self._all_functions()]):
            pass
        for module_name, qualname in self._all_functions():
            if "." in qualname and self._function((module_name, qualname)).forwards:
                # Its callers reach it by method name, where the forwarded argument is not read.
                raise UnreadableCall(f"{module_name}.{qualname}: a method that forwards an operation")

    # --- answers ------------------------------------------------------------------------------

    def reachable(self, root: FunctionKey) -> set[FunctionKey]:
        """``root`` and every function its code can reach."""
        seen = {root}
        pending = [root]
        while pending:
            for callee in self._edges[pending.pop()]:
                if callee not in seen:
                    seen.add(callee)
                    pending.append(callee)
        return seen

    def calls_from(self, module_name: str, function_name: str = "handler") -> set[ApiCall]:
        """Every AWS call the function (a handler by default) can make, directly or through others."""
        if function_name not in self._modules[module_name].functions:
            raise KeyError(f"{module_name} defines no {function_name}")
        return {
            call for key in self.reachable((module_name, function_name)) for call in self._function(key).calls
        }

    def forwards_of(self, module_name: str, qualname: str) -> dict[str, str]:
        """Parameters of a function that name an operation it calls (for the reader's own tests)."""
        return dict(self._function((module_name, qualname)).forwards)


def _argument(callee: _Function, call: ast.Call, param: str) -> ast.expr | None:
    """The expression ``call`` passes for ``param`` of ``callee`` (positional, keyword or default)."""
    for keyword in call.keywords:
        if keyword.arg == param:
            return keyword.value
    assert isinstance(callee.node, ast.FunctionDef | ast.AsyncFunctionDef)
    positional = [*callee.node.args.posonlyargs, *callee.node.args.args]
    names = [a.arg for a in positional]
    if param in names:
        index = names.index(param)
        if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
            return call.args[index]
        defaults = callee.node.args.defaults
        offset = len(positional) - len(defaults)
        if index >= offset:
            return defaults[index - offset]
    return None


def _alias_name(node: ast.AST) -> str | None:
    """The name a client can be kept under: a local name, or ``self.<attr>``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    return None


def _aliases(node: ast.AST, service_of: Callable[[ast.expr], str | None]) -> dict[str, str]:
    """Names assigned a client in ``node``'s code -> the client's service."""
    found: dict[str, str] = {}
    for inner in ast.walk(node):
        if isinstance(inner, ast.Assign) and len(inner.targets) == 1:
            name = _alias_name(inner.targets[0])
            service = service_of(inner.value)
            if name is not None and service is not None:
                found[name] = service
    return found
