"""What a call may do to the values pullback follows: the rule a called function
has (and whether it takes the call's arguments), and the calls refused because
they change a value in place (a method such as ``append``, ``out=``, a library
call that writes into an array)."""
from __future__ import annotations

import ast

from ..core.errors import MissingRuleError
from ..rules import registry

# Methods that change their receiver in place (lists, dicts, sets, ndarrays).  The
# transform follows values by name, so a value put into a container and taken out
# again would lose its derivative: such calls are refused, never run unseen.
IN_PLACE_METHODS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort", "update",
    "setdefault", "popitem", "add", "discard", "fill", "put", "itemset", "resize",
    "partition", "setfield", "__setitem__", "__iadd__", "__isub__", "__imul__"})


def refuse_in_place_method(e: ast.Call, scope):
    """``x.append(v)`` and the other methods that change their receiver are refused."""
    if e.func.attr in IN_PLACE_METHODS:
        raise scope.unsupported(
            f"`{ast.unparse(e.func)}(...)`, which changes `{ast.unparse(e.func.value)}` "
            "in place", e,
            "pullback follows values by name, not containers changed in place (a list "
            "used as a stack, an array sorted in place); write into a NumPy array "
            "instead (`out = np.zeros(n)`, then `out[i] = v`), or build a tuple")


def rule_for_call(e: ast.Call, fn, target, scope):
    """The rule of the called function, if any.  A user's rule receives the call's
    own arguments: a call its VJP cannot take is refused before anything runs."""
    rule = registry.lookup(fn) or registry.lookup(target)
    why = None if rule is None else rule.call_mismatch(
        e.args, {k.arg: k.value for k in e.keywords})
    if why is None:
        return rule
    vjp = rule.helpers["__vjp__"]
    name = getattr(vjp, "__name__", None) or type(vjp).__name__
    raise MissingRuleError(
        f"the rule {name} registered for {rule.name} cannot take the arguments of this "
        f"call ({why}).  A rule is called as {name}(g, ans, <the call's arguments as "
        f"written>): its parameters after g, ans must accept exactly what this call "
        f"passes, positional and keyword, with the defaults it needs for the rest"
        f"\n  {scope.parsed.location(e)}")


def refuse_in_place(e: ast.Call, fn, rule, scope):
    """A library call that writes into an array (``np.copyto(a, x)``,
    ``np.add.at(a, i, x)``, ``out=a``) is refused: the transform follows values
    by name, and would not see the array change."""
    out = next((k.value for k in e.keywords if k.arg == "out"), None)
    if isinstance(out, ast.Constant) and out.value is None:
        out = None
    if out is not None and (rule is None or rule.call_signature is None):
        what = f"`out={ast.unparse(out)}`, which writes into `{ast.unparse(out)}` in place"
    elif registry.writes_in_place(fn) and e.args:
        what = (f"`{ast.unparse(e.func)}(...)`, which writes into "
                f"`{ast.unparse(e.args[0])}` in place")
    else:
        return
    raise scope.unsupported(what, e,
                            "pullback follows values by name and does not see an array "
                            "changed inside a library call: assign the result to a name "
                            "instead (`a = a + x`, `a[i] = v`), or put the call in a "
                            "function of your own that returns a new array and register a "
                            "rule for it with @pullback.rule")
