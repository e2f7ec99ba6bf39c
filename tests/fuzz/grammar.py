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
        ])

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
        return " + ".join(terms)

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
                ("tuple_index", lambda: self.new_tuple(sc))]
        if self.float_params:
            opts.append(("param_reassign", lambda: self.param_reassign(sc)))
        return opts

    def array_statements(self, sc: Scope, new: int) -> list:
        local = sorted(sc.writable)
        opts = [("slice_view", lambda: self.new_view(sc)),
                ("array_param_reassign", lambda: self.array_param_reassign(sc)),
                ("arg_write", lambda: self.arg_write(sc))]
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
        outer = self.lines, self.array_params, self.int_param
        self.lines, self.array_params, self.int_param = [], {}, None
        sc = Scope.top(["a", "b"], {}, {})
        for _ in range(self.integer(0, 2)):
            self.assign(sc)
        self.emit(sc, f"return {self.expr(sc)}, {self.expr(sc)}")
        body = ["def helper(a, b):"] + self.lines
        self.lines, self.array_params, self.int_param = outer
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
        src = self.pick([
            (None, lambda: f"np.zeros({self.length(n)})"),
            (None, lambda: f"{self.choice(sorted(a for a, m in sc.arrays.items() if m == n))}.copy()"),
            (None, lambda: self.array_expr(sc, n, 1) + " * 1.0"),
        ])
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
        p = self.choice(sorted(self.array_params))
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
        self.emit(sc, f"for {i} in {text}:")
        body = sc.child(loop="for")
        body.ints[i] = bound
        if not reused:
            body.for_vars.append(i)
        self.block(body)
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
        outer = self.lines, self.array_params, self.int_param
        self.lines, self.array_params, self.int_param = [], {}, None
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
        lines = ["def scan(a, s, lo):"] + self.lines
        self.lines, self.array_params, self.int_param = outer
        return lines

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
        sc = Scope.top(self.float_params, self.array_params, ints)
        # Declarations first, so that the statements after them can update them.
        self.assign(sc)           # an accumulator
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
        self.body()
        signature = f"def f({', '.join(names)}):"
        helpers = [line for h in (self.helper, self.scan) if h for line in h + ["", ""]]
        text = "\n".join(helpers + [signature] + self.lines) + "\n"
        if not self.use("shared_code"):
            # A docstring makes f's code object differ from every other program's.
            digest = hashlib.sha1(text.encode()).hexdigest()[:12]
            text = text.replace(signature + "\n", f'{signature}\n    """Program {digest}."""\n', 1)
        imports = "import math\n\nimport numpy as np\n"
        if "pullback.grad(" in text or "pullback.rule(" in text:
            imports += "\nimport pullback\n"
        source = imports + "\n\n" + text
        wrt = tuple(i for i, a in enumerate(args) if not isinstance(a, int))
        return Program(source, tuple(args), wrt, frozenset(self.used), other_args=tuple(other_args))


@st.composite
def programs(draw, features: frozenset[str]) -> Program:
    """A strategy of random programs that use only the given features."""
    return Builder(draw, frozenset(features)).program()
