"""A grammar of small numeric Python functions, drawn with Hypothesis.

``programs(features)`` draws a module with a function ``f`` (and sometimes a
module-level ``helper``) that uses only the constructs in ``features`` (see
features.py).  Programs are built so that the *primal* is well defined:

* every variable is read only where it is definitely assigned (a name made in
  a block is forgotten when the block ends, and every name is fresh);
* every index is in bounds: loop ranges and index expressions only produce
  values in ``[0, length)`` of the array they index, at *both* argument sets:
  the array parameters share one length N, drawn twice (``args`` and
  ``other_args``), and every length that depends on N is written with
  ``len(p)``, never as a literal (see ``Size``);
* every loop terminates: ``for`` runs over a ``range`` or an array, and a
  ``while`` loop is and-ed with a counter that changes at the end of every
  iteration (so a ``while`` body holds no ``continue`` of its own);
* ``sqrt`` and ``log`` only see positive arguments, divisions have a positive
  denominator.

What is *not* guaranteed (overflow, branches taken near their threshold, kinks
of ``abs``/``min``/``max``) is left to the oracle, which discards such cases.

Every choice is a Hypothesis draw, so a failing program shrinks: loops towards
``range(n)``, options towards the first one listed, arguments towards 0.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st


@dataclass(frozen=True)
class Program:
    """A generated module: its source, the function's name and arguments."""

    source: str
    args: tuple
    wrt: tuple[int, ...]              # positions of float and float-array parameters
    constructs: frozenset[str]        # the features the program actually uses
    name: str = "f"
    other_args: tuple | None = None   # a second argument set, arrays of another length
    # The module's set_state(k), k < states, sets the values f reads from outside its
    # arguments (globals, closure cells) to those of state k: the oracle calls the
    # gradient functions again after moving from state 0 to 1 (numbers rebound, arrays
    # changed in place) and to 2 (rebound again).  1: f reads no such value.
    states: int = 1
    has_aux: bool = False             # f returns (loss, aux): differentiated with has_aux=True

    def __repr__(self) -> str:      # what Hypothesis prints for a falsifying example
        other = "" if self.other_args is None else f"other_args = {format_args(self.other_args)}\n"
        return f"\n{self.source}\nargs = {format_args(self.args)}\n" + other


@dataclass(frozen=True, order=True)
class Size:
    """A length or an exclusive index bound: ``offset``, plus the common length
    N of the array parameters when ``scaled``.  N differs between a program's
    two argument sets, so a size is checked at both (``Builder.least``,
    ``Builder.fits``) and a scaled one is written as ``len(p) + offset``."""

    scaled: bool
    offset: int

    def at(self, n: int) -> int:
        """The value when the array parameters have length ``n``."""
        return self.offset + (n if self.scaled else 0)

    def plus(self, k: int) -> Size:
        return Size(self.scaled, self.offset + k)


def constant(k: int) -> Size:
    return Size(False, k)


def format_args(args) -> str:
    """The arguments as Python source that recreates them exactly."""
    def one(a):
        if isinstance(a, np.ndarray):
            return "np.array([" + ", ".join(repr(float(v)) for v in a) + "])"
        return repr(a)
    return "(" + ", ".join(one(a) for a in args) + ("," if len(args) == 1 else "") + ")"


#: The states of the values f reads from outside its arguments (Program.states).
STATES = 3


@dataclass(frozen=True)
class External:
    """A value f reads from outside its arguments: a global of the module, or a cell
    of f's closure (``cell``).  ``values`` holds its value at each state: a number, a
    tuple of two numbers, or the entries of a 1-D array (of one length throughout)."""

    name: str
    kind: str               # "float", "tuple" or "array"
    values: tuple
    cell: bool

    def initial(self) -> str:
        return self.value(0)

    def value(self, state: int) -> str:
        v = self.values[state]
        if self.kind == "array":
            return f"np.array({[float(x) for x in v]})"
        return repr(tuple(float(x) for x in v)) if self.kind == "tuple" else repr(float(v))

    def setter(self, state: int) -> str:
        """The statement that moves it to ``state``: state 1 changes an array in place
        (the object f read at state 0 is the one changed), the others rebind."""
        if self.kind == "array" and state == 1:
            return f"{self.name}[:] = {self.value(state)}"
        return f"{self.name} = {self.value(state)}"


def state_function(name: str, externals: list[External], scope: str, tail: list[str]) -> list[str]:
    """``def name(state)`` setting ``externals`` (declared ``scope``: global or
    nonlocal) to ``state``'s values, then running ``tail``."""
    lines = [f"def {name}(state):"]
    if externals:
        lines.append(f"    {scope} " + ", ".join(e.name for e in externals))
        for state in range(STATES):
            lines.append(f"    {'if' if state == 0 else 'elif'} state == {state}:")
            lines += [f"        {e.setter(state)}" for e in externals]
    return lines + [f"    {line}" for line in tail] + ([] if externals or tail else ["    pass"])


#: The functions of the custom_vjp / custom_jvp constructs, by kind: a number of a
#: number (``a``), of two (``a, b``), of an array (``v``: a norm), or an array of an
#: array (elementwise).  ``body`` is the function; ``d`` holds the partial derivative
#: of each parameter (elementwise for an array one, None: zero), what fwd/bwd
#: and the jvp rule return, so that pullback's result can be checked against finite
#: differences of ``body``.  ``C`` is a drawn constant.
CUSTOM_TEMPLATES = {
    "scalar": [("a * a * C + a", ("2.0 * C * a + 1.0",)),
               ("math.tanh(a) * C", ("C * (1.0 - math.tanh(a) ** 2)",)),
               ("math.sin(a) + C * a", ("math.cos(a) + C",)),
               ("a / (1.0 + a * a)", ("(1.0 - a * a) / (1.0 + a * a) ** 2",))],
    "pair": [("a * b + C * a", ("b + C", "a")),
             ("math.sin(a) * b", ("math.cos(a) * b", "math.sin(a)")),
             ("a * np.sign(b) + C * a", ("np.sign(b) + C", None))],
    "norm": [("np.sqrt(np.sum(v * v) + 0.25)", ("v / np.sqrt(np.sum(v * v) + 0.25)",)),
             ("np.sum(np.tanh(v)) * C", ("C * (1.0 - np.tanh(v) ** 2)",))],
    "vec": [("np.tanh(v) * C", ("C * (1.0 - np.tanh(v) ** 2)",)),
            ("v * C + 0.5", ("C",))],
}
CUSTOM_PARAMS = {"scalar": ("a",), "pair": ("a", "b"), "norm": ("v",), "vec": ("v",)}


def custom_function(name: str, decorator: str, kind: str, template: int, c: str,
                    residuals: int) -> list[str]:
    """A module-level ``@pullback.custom_vjp`` (with plain-Python fwd and bwd) or
    ``@pullback.custom_jvp`` (with a plain-Python jvp rule) function; ``residuals``
    picks what fwd hands bwd: its parameters as a tuple, or (one parameter) the
    parameter itself, or None where bwd needs nothing."""
    body, partials = CUSTOM_TEMPLATES[kind][template]
    body = body.replace("C", c)
    partials = [None if d is None else d.replace("C", c) for d in partials]
    params = CUSTOM_PARAMS[kind]
    args = ", ".join(params)
    lines = [f"@pullback.{decorator}", f"def {name}({args}):", f"    return {body}", "", ""]
    if decorator == "custom_vjp":
        if residuals == 2 and all(d is None or not any(p in d for p in params) for d in partials):
            res, unpack = "None", []
        elif residuals == 1 and len(params) == 1:
            res, unpack = params[0], [f"    {params[0]} = res"]
        else:
            res, unpack = f"({args},)", [f"    {args}, = res"]
        value = f"{name}({args})" if residuals == 1 else body
        cots = ", ".join("None" if d is None else f"g * ({d})" for d in partials)
        lines += [f"def {name}_fwd({args}):", f"    return {value}, {res}", "", "",
                  f"def {name}_bwd(res, g):", *unpack, f"    return ({cots},)", "", "",
                  f"{name}.defvjp({name}_fwd, {name}_bwd)"]
    else:
        tangents = ", ".join(f"t{p}" for p in params)
        terms = [f"({d}) * t{p}" if kind in ("scalar", "pair", "vec") else f"np.sum(({d}) * t{p})"
                 for p, d in zip(params, partials) if d is not None]
        lines += [f"@{name}.defjvp", f"def {name}_jvp(primals, tangents):",
                  f"    {args}, = primals", f"    {tangents}, = tangents",
                  f"    return {name}({args}), {' + '.join(terms)}"]
    return lines


@dataclass
class Scope:
    """What a statement may read or write at its point of the program.

    A block works on a ``child`` copy, so names it makes are forgotten after it.
    """

    floats: list[str]
    arrays: dict[str, Size]           # readable 1-D arrays -> length
    writable: set[str]                # local arrays that may be written into
    mats: dict[str, tuple[Size, Size]]  # local 2-D arrays -> shape
    ints: dict[str, Size]             # index expressions -> exclusive upper bound
    for_vars: list[str]               # enclosing for-loop int variables
    tuples: dict[str, int]            # tuple variables -> size
    loop: str | None = None           # innermost loop: None, "for" or "while"
    depth: int = 0                    # nesting of blocks

    @classmethod
    def top(cls, floats, arrays, ints) -> Scope:
        return cls(list(floats), dict(arrays), set(), {}, dict(ints), [], {})

    def child(self, **changes) -> Scope:
        copy = Scope(list(self.floats), dict(self.arrays), set(self.writable), dict(self.mats),
                     dict(self.ints), list(self.for_vars), dict(self.tuples), self.loop,
                     self.depth + 1)
        return dataclasses.replace(copy, **changes)


LITERALS = ("1.0", "0.5", "2.0", "-1.5", "-0.5", "3.0", "-2.0", "0.25")
NEG_BASES = ("-1.5", "-0.5", "-2.0", "-1.0")
# Arguments on a grid of 0.01 in [-2, 2]: readable in a shrunk example, and
# never tiny or subnormal.
VALUES = st.integers(-200, 200).map(lambda i: i / 100)
MAX_DEPTH = 2          # blocks inside blocks
BODY = 3               # statements at most in a block
TOP = 6                # statements at most at the top level, after the declarations

#: The rule the rule_tuple feature gives ``helper``: its VJP by central differences of
#: ``helper`` itself, so that it shares no code with pullback; what is tested is the
#: transform around a rule whose result is a tuple.
RULED_HELPER = [
    "def helper_vjp(g, ans, a, b):",
    "    ha, hb = 1e-7 * (1.0 + abs(a)), 1e-7 * (1.0 + abs(b))",
    "    pa, ma = helper(a + ha, b), helper(a - ha, b)",
    "    pb, mb = helper(a, b + hb), helper(a, b - hb)",
    "    da = (g[0] * (pa[0] - ma[0]) + g[1] * (pa[1] - ma[1])) / (2.0 * ha)",
    "    db = (g[0] * (pb[0] - mb[0]) + g[1] * (pb[1] - mb[1])) / (2.0 * hb)",
    "    return da, db",
    "",
    "",
    "pullback.rule(helper)(helper_vjp)",
]


@dataclass(frozen=True)
class Fold:
    """What Builder.fold draws before writing a fold: which one, its carry's shape
    (``"L"`` a leaf, lists of them tuples), the leaf that is an array (of ``length``),
    how its step is written (a nested ``def``, a ``module``-level def, a ``lambda``),
    and whether a scan's step outputs a pair."""

    kind: str
    shape: object
    array_leaf: int | None
    length: Size | None
    style: str
    pair_output: bool


def flat(shape) -> list:
    """The leaves of a carry's shape (``"L"``, or nested lists of them)."""
    return [shape] if isinstance(shape, str) else [x for part in shape for x in flat(part)]


def paths(shape, prefix=()) -> list[tuple[int, ...]]:
    """The index path of each leaf of ``shape``: ``[L, [L, L]]`` -> (0,), (1, 0), (1, 1)."""
    if isinstance(shape, str):
        return [prefix]
    return [p for k, part in enumerate(shape) for p in paths(part, prefix + (k,))]


def rebuild(shape, items: list[str], top: bool = False) -> str:
    """``items`` (one per leaf, in order) laid out as ``shape``: ``(a, (b, c))``, or,
    as the target of an assignment (``top``), ``a, (b, c)``."""
    items = iter(items)

    def one(part, outer):
        if isinstance(part, str):
            return next(items)
        inner = ", ".join(one(p, False) for p in part)
        return inner if outer else f"({inner})"
    return one(shape, top)


def negate(e: str) -> str:
    return f"(-({e}))" if e.startswith("-") else f"(-{e})"


def is_negative_constant(e: str) -> bool:
    return set(e) <= set("0123456789.-() ") and "-" in e


class Builder:
    """Draws one program, statement by statement, from Hypothesis's ``draw``.

    Each method returns or emits source text; the options of a choice are
    ``(feature or None, thunk[, weight])`` tuples, and ``pick`` only considers
    those whose feature is switched on, recording the ones it uses.
    """

    def __init__(self, draw, features: frozenset[str]):
        self.draw = draw
        self.features = features
        self.used: set[str] = set()
        self.lines: list[str] = []
        self.counter = 0
        self.helper: list[str] | None = None
        self.scan: list[str] | None = None       # the helper with a loop (loop_helper)
        self.float_params: list[str] = []
        self.array_params: dict[str, Size] = {}
        self.int_param: str | None = None
        self.lengths: tuple[int, ...] = ()   # N at each argument set
        self.externals: list[External] = []  # globals and cells f reads (global_values, ...)
        self.module_level = False    # writing module-level code: no closure cell in reach
        self.customs: dict[tuple[str, str], tuple[str, list[str]]] = {}   # custom_vjp, ...
        self.module_defs: list[list[str]] = []  # module-level fold steps
        self.has_aux = False         # f returns (loss, aux)
        self.aux_kind: int | None = None     # which of Builder.aux's kinds
        # Arrays assigned a custom function's result (h = f(h)), never written into
        # after: pullback cannot see that the result is not its argument (a
        # clip_gradient returns it), so a write into it is refused.
        self.aliased: set[str] = set()

    # ---------------------------------------------------------- drawing
    def on(self, feature: str) -> bool:
        return feature in self.features

    def use(self, feature: str) -> bool:
        """Whether ``feature`` is on, recording it as used if so."""
        if self.on(feature):
            self.used.add(feature)
            return True
        return False

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def coin(self) -> bool:
        return self.draw(st.booleans())

    def choice(self, options):
        """One of ``options``, drawn by index: ``sampled_from`` labels its draws
        with the options' hashes, which vary with PYTHONHASHSEED (strings) or
        per process (lambdas), and would make fixed-seed runs differ."""
        options = list(options)
        return options[self.integer(0, len(options) - 1)]

    def pick(self, options):
        """Call one of ``(feature or None, thunk[, weight])``, among those switched on."""
        live = [(o[0], o[1]) for o in options if o[0] is None or self.on(o[0])
                for _ in range(o[2] if len(o) > 2 else 1)]
        feature, thunk = self.choice(live)
        if feature is not None:
            self.used.add(feature)
        return thunk()

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def emit(self, sc: Scope, line: str) -> None:
        self.lines.append("    " * (sc.depth + 1) + line)

    @contextlib.contextmanager
    def module_code(self):
        """Write module-level code (a helper, a fold's step): its own lines, no array
        parameter, no int parameter, and of the externals only the globals."""
        outer = self.lines, self.array_params, self.int_param, self.module_level
        self.lines, self.array_params, self.int_param, self.module_level = [], {}, None, True
        try:
            yield
        finally:
            self.lines, self.array_params, self.int_param, self.module_level = outer

    def readable(self, kind: str) -> list[External]:
        """The externals of ``kind`` that code written now may read."""
        return [e for e in self.externals if e.kind == kind and not (e.cell and self.module_level)]

    # ---------------------------------------------------------- sizes
    def least(self, size: Size) -> int:
        """The smallest value ``size`` takes over the argument sets."""
        return min(size.at(n) for n in self.lengths)

    def fits(self, small: Size, large: Size) -> bool:
        """Whether ``small <= large`` at every argument set."""
        return all(small.at(n) <= large.at(n) for n in self.lengths)

    def gap(self, large: Size, small: Size) -> int:
        """The least of ``large - small`` over the argument sets."""
        return min(large.at(n) - small.at(n) for n in self.lengths)

    def length(self, size: Size) -> str:
        """``size`` as source: a literal, or ``len(p) + offset`` of an array parameter."""
        if not size.scaled:
            return str(size.offset)
        base = f"len({self.choice(sorted(self.array_params))})"
        if size.offset == 0:
            return base
        return f"{base} {'-' if size.offset < 0 else '+'} {abs(size.offset)}"

    # ---------------------------------------------------------- leaves
    def literal(self) -> str:
        return self.choice(LITERALS)

    def index(self, sc: Scope, length: Size) -> str:
        """An int expression with a value in ``[0, length)`` at every argument set."""
        opts = [(None, lambda: str(self.integer(0, self.least(length) - 1)))]
        fits = [v for v, b in sc.ints.items() if self.fits(b, length)]
        if fits:
            opts.append((None, lambda: self.choice(fits), 3))
        exact = [v for v, b in sc.ints.items() if b == length and v in sc.for_vars]
        if exact:
            opts.append((None, lambda: f"{self.length(length.plus(-1))} - {self.choice(exact)}"))
        return self.pick(opts)

    def leaf(self, sc: Scope) -> str:
        opts = [(None, self.literal)]
        if sc.floats:
            opts.append((None, lambda: self.choice(sc.floats), 2))
        if sc.arrays:
            opts.append((None, lambda: self.element(sc), 2))
        if sc.mats:
            opts.append(("local_matrix", lambda: self.mat_element(sc)))
        if sc.tuples:
            opts.append(("tuple_index", lambda: self.tuple_element(sc)))
        if self.int_param:
            opts.append(("int_param", lambda: f"float({self.int_param})"))
        for e in self.readable("float"):
            opts.append(("closure_values" if e.cell else "global_values", lambda e=e: e.name))
        for e in self.readable("tuple"):
            opts.append(("global_values", lambda e=e: f"{e.name}[{self.integer(0, 1)}]"))
        return self.pick(opts)

    def element(self, sc: Scope) -> str:
        a = self.choice(sorted(sc.arrays))
        return f"{a}[{self.index(sc, sc.arrays[a])}]"

    def mat_element(self, sc: Scope) -> str:
        h = self.choice(sorted(sc.mats))
        r, c = sc.mats[h]
        return f"{h}[{self.index(sc, r)}, {self.index(sc, c)}]"

    def tuple_element(self, sc: Scope) -> str:
        t = self.choice(sorted(sc.tuples))
        return f"{t}[{self.integer(0, sc.tuples[t] - 1)}]"

    def var(self, sc: Scope) -> str:
        """A float variable, else a leaf (for arguments that appear twice)."""
        return self.choice(sc.floats) if sc.floats else self.leaf(sc)

    # ---------------------------------------------------------- expressions
    def expr(self, sc: Scope, depth: int = 2) -> str:
        """A float expression of at most ``depth`` levels of operations."""
        if depth <= 0 or self.integer(0, 2) == 0:
            return self.leaf(sc)
        return self.pick(self.scalar_ops(sc, lambda: self.expr(sc, depth - 1))
                         + self.array_reductions(sc, depth - 1))

    def scalar_ops(self, sc: Scope, e) -> list:
        """Operations on float sub-expressions ``e()``."""
        def square_plus(c):              # c + v * v, positive
            v = self.var(sc)
            return f"{c} + {v} * {v}"
        opts = [
            (None, lambda: f"({e()} {self.choice('+-*')} {e()})"),
            (None, lambda: f"({e()} {self.choice('+-*')} {self.literal()})"),
            (None, lambda: negate(e())),
            ("division", lambda: f"({e()} / ({square_plus(self.choice(('1.5', '2.0')))}))"),
            ("pow", lambda: f"({self.pow_base(sc, e())} ** {self.choice(('2', '3', '2.0'))})"),
            ("pow", lambda: f"({square_plus(self.choice(('0.5', '1.0')))}) ** {self.choice(('0.5', '1.5', '-0.5'))}"),
            ("neg_pow_base", lambda: f"({e()} * ({self.choice(NEG_BASES)}) ** {self.choice(('2', '3', '2.0'))})"),
            ("math_calls", lambda: f"math.{self.choice(('sin', 'cos', 'tanh', 'exp'))}({e()})"),
            ("numpy_calls", lambda: f"np.{self.choice(('sin', 'cos', 'tanh', 'exp'))}({e()})"),
            ("sqrt_log", lambda: f"{self.choice(('math.sqrt', 'math.log', 'np.sqrt'))}({square_plus(self.choice(('0.25', '1.0')))})"),
            ("ternary", lambda: f"({e()} if {self.cond(sc)} else {e()})"),
            ("kinks", lambda: f"abs({e()})"),
            ("kinks", lambda: f"{self.choice(('min', 'max'))}({e()}, {e()})"),
            ("nondiff_calls", lambda: f"{self.choice(('np.sign', 'np.floor', 'np.ceil'))}({e()})"),
            ("nondiff_calls", lambda: f"float({e()} > {self.literal()})"),
        ]
        if self.int_param:
            opts.append(("int_param", lambda: f"({e()} * {self.int_param})"))
        for deco in self.custom_decorators():
            opts += [(deco, lambda d=deco: f"{self.custom(d, 'scalar')}({e()})"),
                     (deco, lambda d=deco: f"{self.custom(d, 'pair')}({e()}, {e()})")]
        return opts

    def array_reductions(self, sc: Scope, depth: int) -> list:
        """Scalars computed from arrays."""
        opts = []
        if sc.arrays:
            a = lambda n: self.array_expr(sc, n, depth)

            def dot():
                n = self.some_length(sc)
                return f"np.dot({a(n)}, {a(n)})"
            opts += [
                ("reductions", lambda: f"np.{self.choice(('sum', 'mean'))}({a(self.some_length(sc))})"),
                ("dot", dot),
                ("kinks", lambda: f"np.max({a(self.some_length(sc))})"),
            ]
            for deco in self.custom_decorators():
                opts.append((deco, lambda d=deco: self.custom_norm(d, a(self.some_length(sc)))))
        if sc.mats:
            opts.append(("reductions", lambda: f"np.sum({self.choice(sorted(sc.mats))})"))
        return opts

    def pow_base(self, sc: Scope, base: str) -> str:
        """``base``, unless it is a negative constant such as ``(-2.0)`` and the
        neg_pow_base construct is off: then a variable."""
        if not is_negative_constant(base) or self.use("neg_pow_base"):
            return base
        return self.var(sc)

    def some_length(self, sc: Scope) -> Size:
        return self.choice(sorted(set(sc.arrays.values())))

    def array_expr(self, sc: Scope, n: Size, depth: int = 1) -> str:
        """A 1-D float array expression of length ``n`` (some array has that length)."""
        def row(form):
            h = self.choice(rows)
            return form.format(h=h, i=self.index(sc, sc.mats[h][0]))
        same = sorted(a for a, m in sc.arrays.items() if m == n)
        rows = sorted(h for h, (_, c) in sc.mats.items() if c == n)
        leaves = [(None, lambda: self.choice(same))]
        if rows:
            leaves.append(("local_matrix", lambda: row("{h}[{i}, :]")))
            leaves.append(("row_write", lambda: row("{h}[{i}]")))
        # Matrix-vector products (a matrix's cotangent summed over a loop's steps).
        tall = sorted(h for h, (r, _) in sc.mats.items() if r == n)
        wide = sorted(h for h, (r, c) in sc.mats.items() if c == n and r in sc.arrays.values())
        if tall:
            leaves.append(("matvec", lambda: self.matvec(sc, self.choice(tall), True)))
        if wide:
            leaves.append(("matvec", lambda: self.matvec(sc, self.choice(wide), False)))
        if depth <= 0 or self.integer(0, 2) == 0:
            return self.pick(leaves)
        a = lambda: self.array_expr(sc, n, depth - 1)
        return self.pick(leaves + [
            (None, lambda: f"({a()} * {self.expr(sc, 1)})"),
            (None, lambda: f"({a()} {self.choice('+-*')} {a()})"),
            (None, lambda: f"({a()} + {self.literal()})"),
            ("numpy_calls", lambda: f"np.{self.choice(('sin', 'cos', 'tanh'))}({a()})"),
            ("masked_singular", lambda: self.masked_singular(a())),
            ("pow", lambda: f"({a()} ** 2)"),
        ] + [(d, lambda d=d: f"{self.custom(d, 'vec')}({a()})") for d in self.custom_decorators()])

    def masked_singular(self, inner: str) -> str:
        """sqrt of an expression clamped at 0, bare or behind a select: where the
        expression is negative, a zero cotangent meets sqrt's infinite derivative."""
        root = f"np.sqrt(np.maximum({inner}, 0.0))"
        return self.choice([root, f"np.where({inner} > 0.0, {root}, 0.0)"])

    def matvec(self, sc: Scope, h: str, on_left: bool) -> str:
        """``h @ v`` (h on the left) or ``v @ h``, v a 1-D expression of the length
        that product needs."""
        r, c = sc.mats[h]
        if on_left:
            return f"({h} @ {self.array_expr(sc, c, 0)})"
        return f"({self.array_expr(sc, r, 0)} @ {h})"

    def cond(self, sc: Scope, depth: int = 1) -> str:
        """A boolean condition on data or on indices."""
        opts = [(None, lambda: f"{self.expr(sc, 1)} {self.choice(('<', '>'))} {self.literal()}"),
                (None, lambda: f"{self.expr(sc, 1)} {self.choice(('<', '>', '<=', '>='))} {self.expr(sc, 1)}")]
        if sc.ints:
            opts.append((None, lambda: f"{self.choice(sorted(sc.ints))} {self.choice(('==', '>', '<', '!='))} {self.integer(0, 2)}"))
        if depth > 0:
            opts += [("bool_ops", lambda: f"({self.cond(sc, 0)} {self.choice(('and', 'or'))} {self.cond(sc, 0)})"),
                     ("bool_ops", lambda: f"not {self.cond(sc, 0)}")]
        return self.pick(opts)

    def result(self, sc: Scope) -> str:
        """What a ``return`` gives: an expression plus every local value in scope,
        so that a lost write anywhere changes the gradient (and, unless dead
        parameters are allowed, every parameter)."""
        terms = [self.expr(sc)]
        terms += [v for v in sc.floats if v not in self.float_params]
        terms += [f"np.sum({a})" for a in sorted(sc.arrays) if a not in self.array_params]
        terms += [f"np.sum({h})" for h in sorted(sc.mats)]
        if not self.use("dead_param"):
            terms += self.float_params + [f"np.sum({p})" for p in sorted(self.array_params)]
        terms += [self.external_read(e) for e in self.externals]
        return " + ".join(terms) + (f", {self.aux(sc)}" if self.has_aux else "")

    def aux(self, sc: Scope) -> str:
        """The aux of a ``return loss, aux`` (has_aux): a number, an array, a dict of
        numbers; with aux_other a string, a dict holding one, a tuple holding an array;
        with aux_written_array a local array by name (maybe written in place before).
        An array aux is otherwise a new array (``* 1.0``): an argument written into is
        not changed by pullback (nor a local array, at the return)."""
        def array() -> str:
            return f"({self.array_expr(sc, self.some_length(sc), 1)}) * 1.0"

        def local() -> str:
            mine = sorted(a for a in sc.writable)
            return self.choice(mine) if mine else array()

        def size() -> str:
            return self.length(self.some_length(sc))
        # One kind of aux for the program: every return gives the same structure.
        if self.aux_kind is None:
            self.aux_kind = self.pick([(f, lambda k=k: k) for k, f in enumerate(
                ("has_aux", "has_aux", "has_aux", "aux_other", "aux_other", "aux_other",
                 "aux_written_array"))])
        return [
            ("has_aux", lambda: self.var(sc)),
            ("has_aux", array),
            ("has_aux", lambda: f'{{"value": {self.var(sc)}, "n": {size()}}}'),
            ("aux_other", lambda: f'"{self.fresh("branch")}"'),
            ("aux_other", lambda: f'{{"tag": "{self.fresh("at")}", "value": {self.var(sc)}}}'),
            ("aux_other", lambda: f"({self.var(sc)}, {array()})"),
            ("aux_written_array", local),
        ][self.aux_kind][1]()

    # ---------------------------------------------------------- statements
    def block(self, sc: Scope, most: int = BODY) -> None:
        for _ in range(self.integer(1, most)):
            self.statement(sc)

    def statement(self, sc: Scope) -> None:
        # Inside a block, favour updates of outer names over new names, which
        # are forgotten when the block ends and so cannot reach the result.
        new, update = (3, 1) if sc.depth == 0 else (1, 3)
        self.pick(self.float_statements(sc, new, update) + self.array_statements(sc, new)
                  + self.control_statements(sc))

    def float_statements(self, sc: Scope, new: int, update: int) -> list:
        mine = [v for v in sc.floats if v not in self.float_params]   # never empty: the accumulator
        opts = [(None, lambda: self.assign(sc), new),
                (None, lambda: self.emit(sc, f"{self.choice(mine)} = {self.expr(sc)}"), update),
                ("augassign", lambda: self.emit(
                    sc, f"{self.choice(mine)} {self.choice(('+=', '-=', '*='))} {self.expr(sc, 1)}"), update),
                ("helper_tuple", lambda: self.helper_call(sc)),
                ("loop_helper", lambda: self.emit(
                    sc, f"{self.choice(mine)} += {self.scan_call(sc)}"), 2 if sc.loop else 1),
                ("inner_grad", lambda: self.emit(
                    sc, f"{self.choice(mine)} += {self.scan_call(sc, derivative=True)}")),
                ("tuple_index", lambda: self.new_tuple(sc)),
                ("folds", lambda: self.fold(sc), 4),
                ("accumulate_tuple", lambda: self.fold(sc)),
                ("linalg_tuple", lambda: self.linalg(sc)),
                ("custom_vjp", lambda: self.custom_statement(sc, "custom_vjp"), 2 if sc.loop else 1),
                ("custom_jvp", lambda: self.custom_statement(sc, "custom_jvp"), 2 if sc.loop else 1)]
        if self.float_params:
            opts.append(("param_reassign", lambda: self.param_reassign(sc)))
        return opts

    def array_statements(self, sc: Scope, new: int) -> list:
        local = sorted(sc.writable - self.aliased)
        opts = [("slice_view", lambda: self.new_view(sc)),
                ("array_param_reassign", lambda: self.array_param_reassign(sc))]
        if set(self.array_params) - self.aliased:
            opts.append(("arg_write", lambda: self.arg_write(sc)))
        if sc.depth == 0:
            opts.append(("local_array", lambda: self.new_array(sc), new))
        elif self.on("local_array"):
            opts.append(("block_array", lambda: self.new_array(sc), new))
        if local:
            opts += [("element_write", lambda: self.element_write(sc, local), 3),
                     ("index_array_write", lambda: self.index_array_write(sc, local)),
                     ("slice_write", lambda: self.slice_write(sc, local), 2),
                     ("array_augassign", lambda: self.array_aug(sc, local))]
        if sc.depth == 0:
            opts.append(("local_matrix", lambda: self.new_matrix(sc), 2))
        if sc.mats:
            opts += [("local_matrix", lambda: self.matrix_write(sc), 2),
                     ("row_write", lambda: self.row_write(sc), 2)]
        return opts

    def control_statements(self, sc: Scope) -> list:
        opts = []
        if sc.depth < MAX_DEPTH:
            opts.append(("if_stmt", lambda: self.if_stmt(sc), 3))
            if sc.loop is None or self.on("nested_loops"):
                opts.append(("pair_sum", lambda: self.pair_sum(sc), 3))
            if sc.loop is None:
                opts.append(("row_sum", lambda: self.row_sum(sc), 2))
            if sc.loop is None or self.on("nested_loops"):
                opts += [("for_range", lambda: self.for_range(sc), 4),
                         ("while_loop", lambda: self.while_loop(sc), 2),
                         ("for_array", lambda: self.for_array(sc))]
        if sc.loop is None:
            opts.append(("early_return", lambda: self.guarded(sc, f"return {self.result(sc)}")))
        else:
            in_for = sc.loop == "for"
            opts += [("break" if in_for else "while_exit", lambda: self.guarded(sc, "break")),
                     ("return_in_loop" if in_for else "while_exit",
                      lambda: self.guarded(sc, f"return {self.result(sc)}"))]
            if in_for:
                opts.append(("continue", lambda: self.guarded(sc, "continue")))
        return opts

    def assign(self, sc: Scope) -> None:
        e = self.expr(sc)
        v = self.fresh("s")
        self.emit(sc, f"{v} = {e}")
        sc.floats.append(v)

    def guarded(self, sc: Scope, what: str) -> None:
        self.emit(sc, f"if {self.cond(sc)}:")
        self.emit(sc.child(), what)

    def helper_call(self, sc: Scope) -> None:
        if self.helper is None:
            self.helper = self.make_helper()
        args = f"{self.expr(sc, 1)}, {self.expr(sc, 1)}"
        u, w = self.fresh("u"), self.fresh("w")
        self.emit(sc, f"{u}, {w} = helper({args})")
        sc.floats += [u, w]

    def make_helper(self) -> list[str]:
        """``def helper(a, b)``: straight-line float code returning a pair."""
        with self.module_code():
            sc = Scope.top(["a", "b"], {}, {})
            for _ in range(self.integer(0, 2)):
                self.assign(sc)
            self.emit(sc, f"return {self.expr(sc)}, {self.expr(sc)}")
            body = ["def helper(a, b):"] + self.lines
        if self.coin() and self.use("rule_tuple"):
            body += ["", ""] + RULED_HELPER
        return body

    def new_tuple(self, sc: Scope) -> None:
        t = self.fresh("t")
        size = self.integer(2, 3)
        self.emit(sc, f"{t} = " + ", ".join(self.expr(sc, 1) for _ in range(size)))
        sc.tuples[t] = size

    def param_reassign(self, sc: Scope) -> None:
        x = self.choice(self.float_params)
        rhs = self.pick([(None, lambda: self.expr(sc)),
                         (None, lambda: f"np.sum({self.choice(sorted(sc.arrays))})")])
        self.emit(sc, f"{x} = {rhs}")

    # ---------------------------------------------------------- arrays
    def new_array(self, sc: Scope) -> None:
        n = self.some_length(sc)
        h = self.fresh("h")
        outside = {e.name for e in self.externals}
        own = sorted(a for a, m in sc.arrays.items() if m == n and a not in outside)
        theirs = sorted(a for a, m in sc.arrays.items() if m == n and a in outside)
        src = self.pick([
            (None, lambda: f"np.zeros({self.length(n)})"),
            (None, lambda: self.array_expr(sc, n, 1) + " * 1.0"),
        ] + ([(None, lambda: f"{self.choice(own)}.copy()")] if own else [])
          + ([("outside_copy", lambda: f"{self.choice(theirs)}.copy()")] if theirs else []))
        self.emit(sc, f"{h} = {src}")
        self.used.add("local_array")
        sc.arrays[h] = n
        sc.writable.add(h)

    def new_view(self, sc: Scope) -> None:
        """``r = a[start:]``: readable, never written through (that is refused)."""
        a = self.choice(sorted(a for a, m in sc.arrays.items() if self.least(m) >= 2))  # the parameters are
        start = self.integer(1, self.least(sc.arrays[a]) - 1)
        r = self.fresh("r")
        self.emit(sc, f"{r} = {a}[{start}:]")
        sc.arrays[r] = sc.arrays[a].plus(-start)

    def store_op(self, augmented: tuple[str, ...]) -> str:
        """``=``, or (with the augassign feature) one of ``augmented``."""
        return self.pick([(None, lambda: "="), ("augassign", lambda: self.choice(augmented))])

    def element_write(self, sc: Scope, arrays: list[str]) -> None:
        h = self.choice(arrays)
        op = self.store_op(("+=", "*="))
        self.emit(sc, f"{h}[{self.index(sc, sc.arrays[h])}] {op} {self.expr(sc)}")

    def index_array_write(self, sc: Scope, arrays: list[str]) -> None:
        """``h[np.array([...])] op value``, the positions drawn with repeats and from
        either end, valid at every argument set."""
        h = self.choice(arrays)
        count = self.integer(1, 4)

        def positions(a: str) -> str:
            m = self.least(sc.arrays[a])
            return f"np.array({[self.integer(-m, m - 1) for _ in range(count)]})"

        def gathered() -> str:
            a = self.choice(sorted(sc.arrays))
            return f"{a}[{positions(a)}] * {self.expr(sc, 1)}"
        value = self.pick([(None, lambda: self.expr(sc, 1)), (None, gathered)])
        self.emit(sc, f"{h}[{positions(h)}] {self.choice(('=', '+=', '*='))} {value}")

    def slice_write(self, sc: Scope, arrays: list[str]) -> None:
        h = self.choice(arrays)
        n = sc.arrays[h]
        lo = constant(self.integer(0, self.least(n) - 1))
        stop = self.integer(lo.offset + 1, self.least(n))
        # Up to the end: a width that follows N, or a fixed one.
        hi = n if stop == self.least(n) and self.coin() else constant(stop)
        width = Size(hi.scaled, hi.offset - lo.offset)
        op = self.store_op(("+=",))

        def from_array():
            a = self.choice(sorted(a for a, m in sc.arrays.items() if self.fits(width, m)))
            c = self.integer(0, self.gap(sc.arrays[a], width))
            return f"{a}[{c}:{self.length(width.plus(c))}] * {self.expr(sc, 1)}"

        def stencil():
            # Slices of h itself, of the target's width (or of width 1: broadcast),
            # their bounds written from either end: h[1:-1] + e * (h[2:] - h[:-2]).
            def part():
                w = width if self.coin() else constant(1)
                c = self.integer(0, self.gap(n, w))
                return f"{h}[{self.bounds(constant(c), w.plus(c), n)}]"
            return f"{part()} + {self.expr(sc, 1)} * ({part()} - {part()})"
        value = self.pick([(None, from_array), ("slice_broadcast", lambda: self.expr(sc, 1)),
                           ("offset_slices", stencil)])
        plain = f"{self.length(lo)}:{self.length(hi)}"
        target = f"{h}[:]" if (lo.offset, hi) == (0, n) and self.coin() else \
            f"{h}[{self.bounds(lo, hi, n) if self.on('offset_slices') else plain}]"
        self.emit(sc, f"{target} {op} {value}")

    def bounds(self, lo: Size, hi: Size, n: Size) -> str:
        """``lo:hi`` of an array of length ``n``, each bound written from the start,
        from the end (negative, where ``n - bound`` is the same at every argument
        set) or left out where that means the same."""
        def from_end(bound: Size) -> list[str]:
            return [str(bound.offset - n.offset)] if bound.scaled == n.scaled and bound != n else []
        start = self.choice([self.length(lo)] + from_end(lo) + ([""] if lo == constant(0) else []))
        stop = self.choice([self.length(hi)] + (from_end(hi) if hi != n else [""]))
        return f"{start}:{stop}"

    def array_aug(self, sc: Scope, arrays: list[str]) -> None:
        h = self.choice(arrays)
        rhs = self.pick([(None, lambda: self.expr(sc, 1)),
                         (None, lambda: self.array_expr(sc, sc.arrays[h], 1))])
        self.emit(sc, f"{h} {self.choice(('+=', '-=', '*='))} {rhs}")

    def new_matrix(self, sc: Scope) -> None:
        """A 2-D local array whose rows have the length of an array in scope
        (made at the top level only, so that array stays in scope)."""
        n = self.some_length(sc)
        h = self.fresh("H")
        # Square ones (N by N) take part in matrix-vector products.
        rows = self.pick([(None, lambda: constant(self.integer(2, 3))), ("matvec", lambda: n)])
        self.emit(sc, f"{h} = np.zeros(({self.length(rows)}, {self.length(n)}))")
        sc.mats[h] = (rows, n)

    def matrix_write(self, sc: Scope) -> None:
        h = self.choice(sorted(sc.mats))
        r, c = sc.mats[h]
        self.pick([
            (None, lambda: self.emit(sc, f"{h}[{self.index(sc, r)}, {self.index(sc, c)}] = {self.expr(sc)}")),
            ("augassign", lambda: self.emit(sc, f"{h}[{self.index(sc, r)}, {self.index(sc, c)}] += {self.expr(sc)}")),
            (None, lambda: self.emit(sc, f"{h}[{self.index(sc, r)}, :] = {self.array_expr(sc, c, 1)}")),
        ])

    def row_write(self, sc: Scope) -> None:
        h = self.choice(sorted(sc.mats))
        r, c = sc.mats[h]
        self.emit(sc, f"{h}[{self.index(sc, r)}] = {self.array_expr(sc, c, 1)}")

    def array_param_reassign(self, sc: Scope) -> None:
        p = self.choice(sorted(self.array_params))
        self.emit(sc, f"{p} = {self.array_expr(sc, self.array_params[p], 1)} * {self.expr(sc, 1)}")

    def arg_write(self, sc: Scope) -> None:
        p = self.choice(sorted(set(self.array_params) - self.aliased))
        self.emit(sc, f"{p}[{self.index(sc, self.array_params[p])}] = {self.expr(sc)}")

    # ---------------------------------------------------------- control flow
    def if_stmt(self, sc: Scope) -> None:
        self.emit(sc, f"if {self.cond(sc)}:")
        self.block(sc.child())
        if self.coin():
            self.emit(sc, "else:")
            self.block(sc.child())

    def range_of(self, n: Size) -> str:
        """A ``range`` whose values all lie in ``[0, n)``."""
        def up():           # shrinks towards range(n)
            lo = self.integer(0, self.least(n) - 1)
            back = self.integer(0, self.least(n) - 1 - lo)
            # The stop counted back from n, or a literal no larger than n anywhere.
            stop = self.length(n.plus(-back)) if not self.coin() else \
                str(self.integer(lo + 1, self.least(n)))
            step = self.integer(1, 3)
            if lo == 0 and step == 1 and self.coin():
                return f"range({stop})"
            return f"range({lo}, {stop}" + (f", {step})" if step > 1 else ")")

        def down():         # shrinks towards range(n - 1, -1, -1)
            back = self.integer(0, self.least(n) - 1)
            start = n.plus(-1 - back)
            stop = self.integer(-1, self.least(start) - 1)
            return f"range({self.length(start)}, {stop}, -{self.integer(1, 2)})"
        opts = [(None, up), ("negative_step", down), ("reversed_range", lambda: f"reversed({up()})")]
        if self.int_param and n == Size(True, 0):
            k = self.int_param
            opts += [("int_param", lambda: f"range({k})"),
                     ("int_param", lambda: f"range({k}, {self.length(n)})"),
                     ("int_param", lambda: f"range({k}, -1, -1)")]
        return self.pick(opts)

    def for_range(self, sc: Scope) -> None:
        if sc.loop is not None:
            self.used.add("nested_loops")
        n = self.some_length(sc)
        reusable = [v for v in sc.for_vars if sc.ints.get(v) == n]
        reused = bool(reusable) and self.on("nested_reuse") and self.integer(0, 2) > 0
        i = self.choice(reusable) if reused else self.fresh("i")
        if not reused and sc.ints and self.coin() and self.use("dependent_range"):
            text, bound = self.dependent_range(sc, n, self.choice(sorted(sc.ints)))
        else:
            text, bound = self.range_of(n), n
        marked = sc.loop is None and self.on("checkpointed") and self.coin() \
            and self.use("checkpointed")
        locals_ = [v for v in sc.floats if v not in self.float_params]
        params = self.float_params + [f"np.sum({p})" for p in sorted(self.array_params)]
        entry = self.choice(locals_) if marked and len(locals_) > 1 and self.coin() else None
        shift = self.fresh("q") if marked and locals_ and self.coin() else None
        if marked:
            text = f"pullback.checkpointed({text}, {self.choice(['None', '1', '2', '3'])})"
        if entry is not None:
            # Read just before the loop by an adjoint, assigned in the loop before any
            # read: the segments must give it back its value at loop entry.
            acc = self.choice([v for v in locals_ if v != entry])
            self.emit(sc, f"{acc} = {acc} + {entry} * {entry}")
        if shift is not None:
            # Read in the loop where no adjoint reads it, assigned again after it: the
            # segments run again must read the value it had during the loop.
            self.emit(sc, f"{shift} = 0.5 * {self.choice(params)}")
        self.emit(sc, f"for {i} in {text}:")
        body = sc.child(loop="for")
        body.ints[i] = bound
        if not reused:
            body.for_vars.append(i)
        if entry is not None:
            self.emit(body, f"{entry} = 0.5 * {self.choice(params)} + 0.25")
        if shift is not None:
            acc = self.choice(locals_)
            self.emit(body, f"{acc} = {acc} + {shift}")
        self.block(body)
        if shift is not None:
            self.emit(sc, f"{shift} = 0.75 - {self.choice(params)}")
        if reused:
            self.used.add("nested_reuse")
            self.read_after_reuse(sc, i, n)

    def read_after_reuse(self, sc: Scope, i: str, n: int) -> None:
        """After an inner loop that reused ``i``, read an element at ``i``: its
        value is now the inner loop's last one, not the outer loop's."""
        v = self.choice([v for v in sc.floats if v not in self.float_params])
        a = self.choice(sorted(a for a, m in sc.arrays.items() if m == n))
        self.emit(sc, f"{v} = {v} + {a}[{i}] * {self.expr(sc, 1)}")

    def for_array(self, sc: Scope) -> None:
        if sc.loop is not None:
            self.used.add("nested_loops")
        a = self.choice(sorted(sc.arrays))
        v, j = self.fresh("v"), self.fresh("j")
        body = sc.child(loop="for")
        body.floats.append(v)
        if self.coin():
            self.emit(sc, f"for {j}, {v} in enumerate({a}):")
            body.ints[j] = sc.arrays[a]
        else:
            self.emit(sc, f"for {v} in {a}:")
        self.block(body)

    def while_loop(self, sc: Scope) -> None:
        """A bounded while loop (see ``open_while``) around a block."""
        if sc.loop is not None:
            self.used.add("nested_loops")
        body, step = self.open_while(sc, self.some_length(sc))
        self.block(body)
        self.emit(body, step)

    def open_while(self, sc: Scope, n: Size) -> tuple[Scope, str]:
        """Emit ``while <counter bound> and <data>``, or ``while (<data> or c == 0)
        and <counter bound>``, the counter running over ``[0, n)``; return the
        body's scope and the statement that moves the counter, which the caller
        emits at the end of the body."""
        c = self.fresh("c")
        data = self.cond(sc)
        if self.coin():           # counting up
            self.emit(sc, f"{c} = 0")
            bound, step = f"{c} < {self.length(n)}", f"{c} += 1"
        else:                     # counting down
            self.emit(sc, f"{c} = {self.length(n)} - 1")
            bound, step = f"{c} >= 0", f"{c} -= 1"
        if self.coin() and self.use("bool_ops"):
            self.emit(sc, f"while ({data} or {c} == 0) and {bound}:")
        else:
            self.emit(sc, f"while {bound} and {data}:")
        body = sc.child(loop="while")
        body.ints[c] = n
        return body, step

    def dependent_range(self, sc: Scope, n: Size, i: str) -> tuple[str, Size]:
        """A ``range`` that starts or stops at the enclosing index ``i`` (a
        triangle of index pairs), and the bound of its values: ``range(i + 1,
        n)`` and ``range(i, n)`` stay below ``n``; ``range(i)``, ``range(j, i)``
        and ``range(i - 1, -1, -1)`` below ``i``'s own bound."""
        below = sc.ints[i]
        others = [v for v in sorted(sc.ints) if v != i]
        return self.pick([
            (None, lambda: (f"range({i} + 1, {self.length(n)})", n), 2),
            (None, lambda: (f"range({i}, {self.length(n)})", n)),
            (None, lambda: (f"range({i})", below)),
            (None, lambda: (f"range({self.choice(others) if others else 1}, {i})", below)),
            ("negative_step", lambda: (f"range({i} - 1, -1, -1)", below)),
        ])

    # ---------------------------------------------------------- loop nests
    def pair_sum(self, sc: Scope) -> None:
        """A nest of two or three loops over pairs (triples) of indices, each
        inner range starting or stopping at the enclosing index, the outer one
        sometimes a while loop; at every level maybe a value read further in
        (``w = x[i] * x[i]``) and an exit (``if x[j] > c: continue``, break,
        return) before or after the inner loop; the innermost body adds a
        term of the indices' elements into a sum of the enclosing scope.  The
        shape of pair potentials and of U-statistics."""
        self.used.update(("pair_sum", "nested_loops"))
        levels = 3 if sc.depth == 0 and self.coin() and self.use("triple_loop") else 2
        mine = [v for v in sc.floats if v not in self.float_params]
        self.nest_level(sc, self.some_length(sc), levels, self.choice(mine), [])

    def row_sum(self, sc: Scope) -> None:
        """``for i: acc = ...; for j: acc += x[i] * y[j]; total += f(acc)``: an inner
        loop's sum, started in the outer body and read after the inner loop by the
        outer loop's own sum (a layer's pre-activation feeding a loss).  The outer
        loop carries nothing but its sum, the inner one carries ``acc``."""
        self.used.update(("row_sum", "nested_loops"))
        mine = [v for v in sc.floats if v not in self.float_params]
        total, n = self.choice(mine), self.some_length(sc)
        i, j, acc = self.fresh("i"), self.fresh("j"), self.fresh("acc")
        self.emit(sc, f"for {i} in {self.range_of(n)}:")
        body = sc.child(loop="for")
        body.ints[i] = n
        body.for_vars.append(i)
        self.emit(body, f"{acc} = " + self.pick([(None, lambda: "0.5"),
                                                 (None, lambda: self.element_at(body, i))]))
        self.emit(body, f"for {j} in {self.range_of(n)}:")
        inner = body.child(loop="for")
        inner.ints[j] = n
        inner.for_vars.append(j)
        self.emit(inner, f"{acc} += {self.pair_term(inner, [i, j], [])}")
        self.emit(body, f"{total} += " + self.pick([
            (None, lambda: f"{acc} * {acc}"), ("math_calls", lambda: f"math.tanh({acc})"),
            (None, lambda: f"{acc} * {self.element_at(body, i)}")]))

    def nest_level(self, sc: Scope, n: Size, left: int, total: str, indices: list[str]) -> None:
        """One loop of ``pair_sum``, with ``left`` loops (itself included) to go."""
        if not indices and self.coin() and self.use("while_around_for"):
            body, step = self.open_while(sc, n)
            i = next(v for v in body.ints if v not in sc.ints)
        else:
            i, step = self.fresh("i"), None
            text, bound = (self.dependent_range(sc, n, indices[-1])
                           if indices and self.use("dependent_range") else (self.range_of(n), n))
            self.emit(sc, f"for {i} in {text}:")
            body = sc.child(loop="for")
            body.ints[i] = bound
            body.for_vars.append(i)
        indices = indices + [i]
        if left > 1 and self.coin() and self.use("outer_value"):
            w = self.fresh("w")
            self.emit(body, f"{w} = {self.pair_term(body, indices, [])}")
            body.floats.append(w)
        exit_first = self.coin()
        if exit_first and self.integer(0, 2) > 0:
            self.nest_exit(body, i)
        if left > 1:
            self.nest_level(body, n, left - 1, total, indices)
        else:
            carried = [v for v in body.floats if v.startswith("w")]
            op = "+=" if self.use("augassign") else f"= {total} +"
            self.emit(body, f"{total} {op} {self.pair_term(body, indices, carried)}")
            if self.coin():
                self.statement(body)
        # The innermost loop mostly has an exit: its count of iterations then
        # varies from one outer iteration to the next.
        if not exit_first and (left == 1 or self.coin()):
            self.nest_exit(body, i)
        if step is not None:
            self.emit(body, step)

    def element_at(self, sc: Scope, i: str) -> str:
        """``a[i]`` of an array that ``i`` indexes in bounds (else any element)."""
        fit = sorted(a for a, m in sc.arrays.items() if self.fits(sc.ints[i], m))
        return f"{self.choice(fit)}[{i}]" if fit else self.element(sc)

    def pair_term(self, sc: Scope, indices: list[str], carried: list[str]) -> str:
        """A term of the elements at the nest's indices and of the values
        ``carried`` from outer bodies: x[i] * y[j], (x[i] - x[j]) ** 2, w * x[j]."""
        at = lambda: self.element_at(sc, self.choice(indices))
        opts = [(None, lambda: f"{at()} * {at()}", 2),
                (None, lambda: f"{at()} * {self.expr(sc, 1)}"),
                ("pow", lambda: f"({at()} - {at()}) ** 2"),
                ("division", lambda: f"{at()} / (1.0 + ({at()} - {at()}) ** 2)"),
                ("loop_helper", lambda: self.scan_call(sc)),
                ("inner_grad", lambda: self.scan_call(sc, derivative=True))]
        if carried:
            opts.append((None, lambda: f"{self.choice(carried)} * {at()}", 3))
        if sc.tuples:           # an item of a tuple of active numbers made before the nest
            opts.append(("tuple_index", lambda: f"{self.tuple_element(sc)} * {at()}", 2))
        return self.pick(opts)

    def nest_exit(self, sc: Scope, i: str) -> None:
        """``if <cutoff on x[i], or a condition>: continue / break / return``
        (no continue in a while loop, whose counter moves at the end of the body)."""
        in_for = sc.loop == "for"
        exits = ("continue", "break", "return_in_loop") if in_for else ("while_exit",)
        if not any(self.on(e) for e in exits):
            return          # pair_sum without any exit feature: no exit
        cond = self.pick([(None, lambda: f"{self.element_at(sc, i)} {self.choice('<>')} {self.literal()}", 2),
                          (None, lambda: self.cond(sc))])
        what = self.pick(([("continue", lambda: "continue", 2)] if in_for else [])
                         + [("break" if in_for else "while_exit", lambda: "break"),
                            ("return_in_loop" if in_for else "while_exit",
                             lambda: f"return {self.result(sc)}")])
        self.emit(sc, f"if {cond}:")
        self.emit(sc.child(), what)

    def scan_call(self, sc: Scope, derivative: bool = False) -> str:
        """``scan(a, e, lo)`` with ``lo`` in ``[0, len(a)]``: the helper's loop
        runs over ``a[lo:]``; with ``derivative``, ``pullback.grad(scan, 1)(...)``,
        its derivative in ``s``, which the program's own derivative differentiates
        again (needs loop_helper: the helper)."""
        if derivative and not self.on("loop_helper"):
            return self.expr(sc, 1)
        if self.scan is None:
            self.scan = self.make_scan()
        a = self.choice(sorted(sc.arrays))
        call = "pullback.grad(scan, 1)" if derivative else "scan"
        return f"{call}({a}, {self.expr(sc, 1)}, {self.index(sc, sc.arrays[a].plus(1))})"

    def make_scan(self) -> list[str]:
        """``def scan(a, s, lo)``: a for loop over ``a[lo:]`` that returns from
        inside when a condition on the element holds, and otherwise adds to a
        running value that it returns after the loop (pullback inlines it)."""
        with self.module_code():
            top = Scope.top(["s"], {}, {})
            self.emit(top, f"t = {self.expr(top, 1)}")
            top.floats.append("t")
            self.emit(top, "for m in range(lo, len(a)):")
            body = top.child(loop="for")
            self.emit(body, "v = a[m]")
            body.floats.append("v")
            self.emit(body, f"if {self.cond(body)}:")
            self.emit(body.child(), f"return t + v * {self.expr(body, 1)}")
            self.emit(body, f"t = t + v * {self.expr(body, 1)}")
            self.emit(top, "return t")
            return ["def scan(a, s, lo):"] + self.lines

    # ---------------------------------------------------------- custom derivatives
    def custom(self, decorator: str, kind: str) -> str:
        """The name of the program's ``decorator`` (custom_vjp or custom_jvp) function
        of ``kind`` (see CUSTOM_TEMPLATES), made at its first use."""
        key = (decorator, kind)
        if key not in self.customs:
            name = f"{decorator.removeprefix('custom_')}_{kind}"
            template = self.integer(0, len(CUSTOM_TEMPLATES[kind]) - 1)
            c = self.choice(("0.5", "2.0", "-1.5", "0.25"))
            self.customs[key] = (name, custom_function(name, decorator, kind, template, c,
                                                       self.integer(0, 2)))
        return self.customs[key][0]

    def custom_decorators(self) -> tuple[str, ...]:
        """The custom-derivative constructs code written now may call: not module-level
        code, which a derivative of a derivative (inner_grad) may differentiate in
        forward mode, which a custom_vjp function has none of."""
        return () if self.module_level else ("custom_vjp", "custom_jvp")

    def custom_norm(self, decorator: str, array: str) -> str:
        """The norm-like custom function of ``array``, sometimes to a power (1.5 where
        it is positive: ``total += safe_norm(X[i]) ** 1.5``)."""
        name = self.custom(decorator, "norm")
        positive = "np.sqrt" in self.customs[(decorator, "norm")][1][2]
        power = self.choice(("", " ** 2") + ((" ** 1.5",) if positive else ()))
        return f"({name}({array}){power})"

    def custom_statement(self, sc: Scope, decorator: str) -> None:
        """A custom function's result assigned back to its argument's name (``s =
        f(s)``, ``h = f(h)``, ``p = f(p)``: the parameters where their reassignment is
        on; arrays outside loops), or added into a sum (``s += norm(a) ** 1.5``)."""
        mine = [v for v in sc.floats if v not in self.float_params]
        floats = mine + (self.float_params if self.on("param_reassign") else [])
        arrays = sorted(sc.writable) + (sorted(self.array_params)
                                        if self.on("array_param_reassign") else [])

        def back_float():
            v = self.choice(floats)
            self.emit(sc, f"{v} = {self.custom(decorator, 'scalar')}({v})")

        def back_array():
            h = self.choice(arrays)
            self.emit(sc, f"{h} = {self.custom(decorator, 'vec')}({h})")
            self.aliased.add(h)

        def into_sum():
            array = self.array_expr(sc, self.some_length(sc), 0)
            self.emit(sc, f"{self.choice(mine)} += {self.custom_norm(decorator, array)}")
        # An array only outside loops: a write into it earlier in a loop's body would
        # meet the result the next time round (see Builder.aliased).
        self.pick([(None, back_float, 2), (None, into_sum, 2)]
                  + ([(None, back_array, 2)] if arrays and sc.loop is None else []))

    # ---------------------------------------------------------- folds
    def fold(self, sc: Scope) -> None:
        """``pullback.scan`` (maybe reversed), ``foldl`` or ``foldr`` over an array in
        scope with a tuple carry (nested, or with an array leaf, with nested_carry), or
        ``accumulate`` of a number (of a pair, with accumulate_tuple).  The step is a
        def nested in f (unpacking its carry, reading f's values), a module-level def,
        or a lambda (indexing its carry).  Its results join the scope: the carry's
        leaves, scan's stacked outputs, accumulate's running values."""
        kind = self.pick([("folds", lambda: "scan", 3), ("folds", lambda: "foldl"),
                          ("folds", lambda: "foldr"), ("folds", lambda: "accumulate"),
                          ("accumulate_tuple", lambda: "accumulate_tuple")])
        if kind == "accumulate":
            shape = "L"
        elif kind == "accumulate_tuple":
            shape = ["L", "L"]
        else:
            shape = self.pick([(None, lambda: ["L", "L"], 2), (None, lambda: ["L", "L", "L"]),
                               ("nested_carry", lambda: ["L", ["L", "L"]]),
                               ("nested_carry", lambda: [["L", "L"], "L"])])
        # One leaf an array (of a length in scope) with nested_carry.
        array_leaf = self.integer(0, len(flat(shape)) - 1) \
            if kind in ("scan", "foldl", "foldr") and self.coin() and self.use("nested_carry") \
            else None
        plan = Fold(kind, shape, array_leaf, self.some_length(sc) if array_leaf is not None else None,
                    self.choice(("def", "module", "lambda")),
                    kind == "scan" and self.coin() and self.use("scan_tuple_output"))
        if plan.style == "module":
            with self.module_code():
                step = self.fold_step(plan, Scope.top([], {}, {}))
            self.module_defs.append(step)
            step = step[0][4:step[0].index("(")]
        elif plan.style == "def":
            lines = self.fold_step(plan, sc.child(loop=None))
            for line in lines:
                self.emit(sc, line)
            step = lines[0][4:lines[0].index("(")]
        else:
            step = self.fold_step(plan, sc.child(loop=None))
        self.fold_call(sc, plan, step)

    def fold_step(self, plan: Fold, body: Scope):
        """The step function's lines (a def), or its text (a lambda); ``body`` is the
        scope its expressions read, to which the carry's leaves are added."""
        carry, v = ("c", "v") if plan.style == "lambda" else ("carry", "v")
        count = len(flat(plan.shape))
        # The leaves as the step reads them: names it unpacks, or c[0][1] in a lambda.
        if plan.style == "lambda":
            inside = [carry + "".join(f"[{k}]" for k in path) for path in paths(plan.shape)]
        elif plan.shape == "L":
            inside = [carry]
        else:
            inside = [self.fresh("a") for _ in range(count)]
        leaves = [x for k, x in enumerate(inside) if k != plan.array_leaf]
        body.floats += leaves + [v]
        if plan.array_leaf is not None:
            body.arrays[inside[plan.array_leaf]] = plan.length

        def update(k: int, x: str) -> str:
            if k == plan.array_leaf:
                return f"{x} * {self.choice(('0.5', v))} + {self.expr(body, 1)}"
            return self.pick([(None, lambda: f"{x} * {v} + {self.expr(body, 1)}"),
                              (None, lambda: f"{x} + {v} * {self.expr(body, 1)}"),
                              (None, lambda: f"{x} * 0.5 + {self.expr(body, 1)}"),
                              (None, lambda: x)])     # passed on unchanged
        result = rebuild(plan.shape, [update(k, x) for k, x in enumerate(inside)])

        def output() -> str:
            return f"{self.choice(leaves)} * {self.expr(body, 1)}"
        if plan.kind == "scan":
            y = f"({output()}, {output()})" if plan.pair_output else output()
            result = f"{result}, {y}"
        params = f"{v}, {carry}" if plan.kind == "foldr" else f"{carry}, {v}"
        if plan.style == "lambda":
            return f"lambda {params}: " + (f"({result})" if plan.kind == "scan" else result)
        lines = [f"def {self.fresh('step')}({params}):"]
        if plan.shape != "L":
            lines.append(f"    {rebuild(plan.shape, inside, top=True)} = {carry}")
        return lines + [f"    return {result}"]

    def fold_call(self, sc: Scope, plan: Fold, step: str) -> None:
        """The call of the fold, its results added to the scope."""
        xs = self.choice(sorted(sc.arrays))
        n = sc.arrays[xs]
        count = len(flat(plan.shape))
        init = rebuild(plan.shape, [self.array_expr(sc, plan.length, 1) if k == plan.array_leaf
                                    else self.expr(sc, 1) for k in range(count)])
        outs = [self.fresh("u") for _ in range(count)]
        if plan.kind == "scan":
            ys = self.fresh("ys")
            reverse = ", reverse=True" if self.coin() else ""
            call = f"pullback.scan({step}, {init}, {xs}{reverse})"
            if self.coin():         # bound whole, unpacked after
                whole = self.fresh("r")
                self.emit(sc, f"{whole} = {call}")
                call = whole
            self.emit(sc, f"{rebuild(plan.shape, outs)}, {ys} = {call}")
            if plan.pair_output:
                self.read_pairs(sc, ys, n)
            else:
                sc.arrays[ys] = n
            if self.coin():
                return      # the final carry never read, as often (the outputs are)
        elif plan.kind in ("foldl", "foldr"):
            self.emit(sc, f"{rebuild(plan.shape, outs, top=True)} = "
                          f"pullback.{plan.kind}({step}, {xs}, {init})")
        else:
            A = self.fresh("A")
            self.emit(sc, f"{A} = pullback.accumulate({step}, {xs}, {init})")
            if plan.kind == "accumulate":
                sc.arrays[A] = n
            else:
                self.read_pairs(sc, A, n)
            return
        for k, u in enumerate(outs):
            if k == plan.array_leaf:
                sc.arrays[u] = plan.length
            else:
                sc.floats.append(u)

    def read_pairs(self, sc: Scope, A: str, n: Size) -> None:
        """A float read from ``A``, a fold's 2-D result of ``n`` rows of pairs."""
        q = self.fresh("q")
        self.emit(sc, f"{q} = np.sum({A}[:, {self.integer(0, 1)}]) + {A}[{self.index(sc, n)}, 1]")
        sc.floats.append(q)

    # ---------------------------------------------------------- linear algebra
    def linalg(self, sc: Scope) -> None:
        """A symmetric matrix with well separated eigenvalues built from the
        arguments, ``S = eye(n) * (arange(n) + shift) + 0.05 * outer(u, u)`` (or
        ``np.diag(arange(n) + shift)``, with diag_build; shift in [1.9, 2.1]) with
        ``u = tanh(...)`` (its eigenvalues move by at most 0.05 * n < 0.35 from the
        diagonal's, which are 1 apart), and one or two of np.linalg.slogdet and
        eigh of it, unpacked, indexed, or (named_fields) read by field.  Eigenvectors
        are read squared: their sign is LAPACK's choice."""
        n = self.some_length(sc)
        u, S = self.fresh("u"), self.fresh("S")
        self.emit(sc, f"{u} = np.tanh({self.array_expr(sc, n, 1)})")
        sc.arrays[u] = n
        shift = f"(2.0 + 0.1 * np.tanh({self.expr(sc, 1)}))"
        diagonal = f"np.arange({self.length(n)}) * 1.0 + {shift}"
        diagonal = self.pick([(None, lambda: f"np.eye({self.length(n)}) * ({diagonal})"),
                              ("diag_build", lambda: f"np.diag({diagonal})")])
        self.emit(sc, f"{S} = {diagonal} + 0.05 * np.outer({u}, {u})")

        def column(V: str) -> str:
            j = self.integer(0, self.least(n) - 1)
            return self.choice([f"np.sum({V}[:, {j}] ** 2 * {self.array_expr(sc, n, 0)})",
                                f"{V}[{self.index(sc, n)}, {j}] * {V}[{self.index(sc, n)}, {j}]"])

        def slogdet(fields: bool):
            ld = self.fresh("ld")
            if fields:
                r = self.fresh("r")
                self.emit(sc, f"{r} = np.linalg.slogdet({S})")
                self.emit(sc, f"{ld} = {r}.logabsdet * {r}.sign")
            elif self.coin():
                sg = self.fresh("sg")
                self.emit(sc, f"{sg}, {ld} = np.linalg.slogdet({S})")
                sc.floats.append(sg)
            else:
                r = self.fresh("r")
                self.emit(sc, f"{r} = np.linalg.slogdet({S})")
                self.emit(sc, f"{ld} = {r}[1]")
                sc.tuples[r] = 2
            sc.floats.append(ld)

        def eigh(fields: bool):
            w, q = self.fresh("w"), self.fresh("q")
            if fields or self.coin():
                e = self.fresh("e")
                self.emit(sc, f"{e} = np.linalg.eigh({S})")
                values, vectors = (f"{e}.eigenvalues", f"{e}.eigenvectors") if fields \
                    else (f"{e}[0]", f"{e}[1]")
                self.emit(sc, f"{w} = {values}")
            else:
                vectors = self.fresh("V")
                self.emit(sc, f"{w}, {vectors} = np.linalg.eigh({S})")
            sc.arrays[w] = n
            self.emit(sc, f"{q} = {column(vectors)}")
            sc.floats.append(q)
        for _ in range(self.integer(1, 2)):
            self.pick([(None, lambda: slogdet(False)), (None, lambda: eigh(False)),
                       ("named_fields", lambda: slogdet(True)),
                       ("named_fields", lambda: eigh(True))])

    # ---------------------------------------------------------- outside values
    def declare_externals(self) -> None:
        """The globals (global_values) and closure cells (closure_values) f reads:
        one or two of each, a number, an array of a fixed length 2-4, or (with
        outside_tuple) a pair of numbers, with a value at each of the STATES."""
        stems = {False: {"float": "G", "array": "W", "tuple": "T"},
                 True: {"float": "k", "array": "w", "tuple": "t"}}
        for feature, cell in (("global_values", False), ("closure_values", True)):
            if not (self.on(feature) and self.coin()):
                continue
            self.used.add(feature)
            for _ in range(self.integer(1, 2)):
                kind = self.pick([(None, lambda: "float"), (None, lambda: "array"),
                                  ("outside_tuple", lambda: "tuple")])
                size = {"float": 0, "tuple": 2, "array": self.integer(2, 4)}[kind]
                values = tuple(self.draw(VALUES) if kind == "float"
                               else tuple(self.draw(VALUES) for _ in range(size))
                               for _ in range(STATES))
                self.externals.append(External(self.fresh(stems[cell][kind]), kind, values, cell))

    def read_externals(self, sc: Scope) -> None:
        """Add each external into the accumulator (see external_read)."""
        acc = sc.floats[-1]
        for e in self.externals:
            self.emit(sc, f"{acc} = {acc} + {self.external_read(e)}")

    def external_read(self, e: External) -> str:
        """A term of ``e`` times an element of an array parameter, whose derivative
        is ``e`` (what a stale value would get wrong): f adds one into its first
        accumulator and one into every result."""
        p = self.choice(sorted(self.array_params))
        j = self.integer(0, min(self.lengths) - 1)
        if e.kind == "float":
            read = e.name
        elif e.kind == "tuple":
            read = f"{e.name}[{self.integer(0, 1)}]"
        else:
            read = self.choice([f"np.dot({e.name}, {e.name})",
                                f"{e.name}[{self.integer(0, len(e.values[0]) - 1)}]"])
        return f"{read} * {p}[{j}]"

    # ---------------------------------------------------------- the function
    def parameters(self) -> tuple[list[str], list, list]:
        """Draw the parameter list and two argument sets: 0-2 floats, 1-2 arrays
        of one length N (2-4 in the first set, another length in 2-6 in the
        second), and sometimes an int index ``k`` below N."""
        n_floats, n_arrays, size = self.integer(0, 2), self.integer(1, 2), self.integer(2, 4)
        other = self.integer(2, 5)
        other += other >= size          # never the first length
        self.lengths = (size, other)
        names, args, other_args = [], [], []
        for i in range(n_floats):
            self.float_params.append(f"x{i}")
            args.append(self.draw(VALUES))
            other_args.append(self.draw(VALUES))
        for i in range(n_arrays):
            self.array_params[f"p{i}"] = Size(True, 0)
            args.append(np.array(self.draw(st.lists(VALUES, min_size=size, max_size=size))))
            other_args.append(np.array(self.draw(st.lists(VALUES, min_size=other, max_size=other))))
        names = self.float_params + list(self.array_params)
        if self.coin() and self.use("int_param"):
            self.int_param = "k"
            names.append("k")
            args.append(self.integer(0, size - 1))
            other_args.append(self.integer(0, other - 1))
        return names, args, other_args

    def body(self) -> None:
        ints = {self.int_param: Size(True, 0)} if self.int_param else {}
        outside = {e.name: constant(len(e.values[0])) for e in self.readable("array")}
        sc = Scope.top(self.float_params, {**self.array_params, **outside}, ints)
        # Declarations first, so that the statements after them can update them.
        self.assign(sc)           # an accumulator
        self.read_externals(sc)
        if self.coin() and self.use("local_array"):
            self.new_array(sc)
        if self.coin() and self.use("local_matrix"):
            self.new_matrix(sc)
        count = self.integer(1, TOP)
        # Loop nests left early are where reverse mode keeps the most state (a
        # count of iterations per outer iteration): half the programs get one
        # at a drawn place, besides those that statement() draws.
        nest_at = self.integer(0, count) if self.on("pair_sum") and self.coin() else None
        for place in range(count + 1):
            if place == nest_at:
                self.pair_sum(sc)
            if place < count:
                self.statement(sc)
        self.emit(sc, f"return {self.result(sc)}")

    def program(self) -> Program:
        names, args, other_args = self.parameters()
        self.declare_externals()
        self.has_aux = any(map(self.on, ("has_aux", "aux_other", "aux_written_array"))) \
            and self.coin()
        self.body()
        f = [f"def f({', '.join(names)}):"] + self.lines
        defs = [self.helper, self.scan, *self.module_defs, *(c[1] for c in self.customs.values())]
        helpers = [line for h in defs if h for line in h + ["", ""]]
        if not self.use("shared_code"):
            # A docstring makes f's code object differ from every other program's.
            digest = hashlib.sha1(("\n".join(helpers + f) + "\n").encode()).hexdigest()[:12]
            f.insert(1, f'    """Program {digest}."""')
        text = "\n".join(self.module_text(helpers, f)) + "\n"
        imports = "import math\n\nimport numpy as np\n"
        if "pullback." in text:
            imports += "\nimport pullback\n"
        source = imports + "\n\n" + text
        wrt = tuple(i for i, a in enumerate(args) if not isinstance(a, int))
        return Program(source, tuple(args), wrt, frozenset(self.used), other_args=tuple(other_args),
                       states=STATES if self.externals else 1, has_aux=self.has_aux)

    def module_text(self, helpers: list[str], f: list[str]) -> list[str]:
        """The module's lines after the imports: the globals f reads, the helpers, f
        (made by ``make()`` around its closure cells, with closure_values), and
        ``set_state`` (with any external value: see Program.states)."""
        cells = [e for e in self.externals if e.cell]
        module = [e for e in self.externals if not e.cell]
        lines = [f"{e.name} = {e.initial()}" for e in module] + (["", ""] if module else [])
        lines += helpers
        if cells:
            indent = lambda block: [f"    {line}" if line else "" for line in block]  # noqa: E731
            lines += (["def make():"] + indent([f"{e.name} = {e.initial()}" for e in cells] + [""]
                                               + f + [""]
                                               + state_function("set_cells", cells, "nonlocal", [])
                                               + ["", "return f, set_cells"])
                      + ["", "", "f, set_cells = make()"])
        else:
            lines += f
        if self.externals:
            lines += ["", ""] + state_function("set_state", module, "global",
                                               ["set_cells(state)"] if cells else [])
        return lines


@st.composite
def programs(draw, features: frozenset[str]) -> Program:
    """A strategy of random programs that use only the given features."""
    return Builder(draw, frozenset(features)).program()
