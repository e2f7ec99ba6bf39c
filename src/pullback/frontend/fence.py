"""The fence: reject unsupported syntax up front, with a located message.

Running this before any transform means a user sees one clear error naming
the file, line and construct, not a failure deep inside a pass or in the
generated code.
"""
from __future__ import annotations

import ast

from ..core.errors import UnsupportedSyntaxError
from .parse import ParsedFunction

# node type -> (what it is, what to do instead)
_UNSUPPORTED = {
    ast.With: ("a `with` statement", "move the context manager outside the differentiated function"),
    ast.AsyncWith: ("an `async with` statement", "differentiate a synchronous function"),
    ast.Try: ("a `try` statement", "move error handling outside the differentiated function"),
    ast.TryStar: ("a `try` statement", "move error handling outside the differentiated function"),
    ast.Raise: ("a `raise` statement", "validate inputs before calling the gradient"),
    ast.Assert: ("an `assert` statement", "check inputs before calling the gradient"),
    ast.Yield: ("`yield`", "return a value; generators are not differentiable"),
    ast.YieldFrom: ("`yield from`", "return a value; generators are not differentiable"),
    ast.Await: ("`await`", "differentiate a synchronous function"),
    ast.AsyncFunctionDef: ("an `async def`", "differentiate a synchronous function"),
    ast.AsyncFor: ("an `async for` loop", "use a plain for loop"),
    ast.ClassDef: ("a class definition", "define the class outside the differentiated function"),
    ast.Global: ("a `global` statement", "pass the value in as an argument and return the new value"),
    ast.Nonlocal: ("a `nonlocal` statement", "pass the value in as an argument and return the new value"),
    ast.Import: ("an `import` statement", "import at module level"),
    ast.ImportFrom: ("an `import` statement", "import at module level"),
    ast.Delete: ("a `del` statement", "let the variable go out of scope instead"),
    ast.Match: ("a `match` statement", "use if/elif/else"),
    ast.ListComp: ("a list comprehension", "write the loop out, or use a NumPy expression"),
    ast.SetComp: ("a set comprehension", "write the loop out"),
    ast.DictComp: ("a dict comprehension", "write the loop out"),
    ast.GeneratorExp: ("a generator expression", "write the loop out with an accumulator"),
    ast.Set: ("a set", "use arrays"),
    ast.JoinedStr: ("an f-string", "format strings outside the differentiated function"),
    ast.NamedExpr: ("an assignment expression (:=)", "assign in a separate statement"),
    ast.Starred: ("a starred expression (*args)", "pass the arguments one by one"),
}

_CALLS_NOT_SUPPORTED = {
    "exec": "write the code directly in the function",
    "eval": "write the expression directly in the function",
    "globals": "pass values in as arguments",
    "locals": "pass values in as arguments",
    "setattr": "assign to local variables or array elements",
    "delattr": "assign to local variables or array elements",
}


def check(parsed: ParsedFunction) -> None:
    """Raise UnsupportedSyntaxError at the first construct we cannot differentiate."""
    fn = parsed.node
    a = fn.args
    if a.vararg or a.kwarg:
        raise UnsupportedSyntaxError("a function with *args or **kwargs", parsed.location(fn),
                                     "give it named parameters")
    # sum(...) / math.fsum(...) of a generator or list comprehension is lowered to
    # a loop; any other comprehension is refused below.
    # Only the body runs when the function is called: its decorators and default
    # values were evaluated when it was defined, and are not differentiated.
    body = [node for stmt in fn.body for node in ast.walk(stmt)]
    summed = {id(node.args[0]) for node in body
              if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
              and isinstance(node.args[0], (ast.GeneratorExp, ast.ListComp))
              and ast.unparse(node.func) in ("sum", "math.fsum", "fsum")}
    for node in body:
        kind = type(node)
        if id(node) in summed:
            continue
        if kind in _UNSUPPORTED:
            what, hint = _UNSUPPORTED[kind]
            raise UnsupportedSyntaxError(what, parsed.location(node), hint)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _CALLS_NOT_SUPPORTED:
            raise UnsupportedSyntaxError(f"a call to {node.func.id}()", parsed.location(node),
                                         _CALLS_NOT_SUPPORTED[node.func.id])
        if isinstance(node, (ast.For, ast.While)) and node.orelse:
            raise UnsupportedSyntaxError("a loop with an `else:` clause", parsed.location(node),
                                         "use a flag variable set before `break`")
        if isinstance(node, ast.Assign):
            for t in node.targets:
                _check_target(t, parsed)
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            _check_target(node.target, parsed)
        if isinstance(node, ast.keyword) and node.arg is None:
            raise UnsupportedSyntaxError("a **kwargs argument", parsed.location(node),
                                         "pass the keyword arguments one by one")
        if isinstance(node, ast.FunctionDef) and node is not fn and node.decorator_list:
            raise UnsupportedSyntaxError("a decorated nested function", parsed.location(node),
                                         "define it at module level")


def _check_target(t: ast.expr, parsed: ParsedFunction) -> None:
    if isinstance(t, ast.Attribute):
        raise UnsupportedSyntaxError("assignment to an attribute", parsed.location(t),
                                     "assign to a local variable or an array element")
    if isinstance(t, ast.Subscript):
        if not isinstance(t.value, ast.Name):
            raise UnsupportedSyntaxError("assignment through a chained subscript (a[i][j] = ...)",
                                         parsed.location(t), "write a[i, j] = ...")
    if isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            _check_target(e, parsed)
