"""The oracle of the fuzz tests: run a generated program through pullback and
classify what happens.

The references share no code with pullback: the value is the plain call, and
the gradient is a Richardson-extrapolated central difference computed here
(not ``pullback.check_grad``), so a bug in pullback's own checker cannot hide
a bug in its gradients.

Outcomes, from best to worst:

* ``correct``  every entry point gave the reference value and gradient;
* ``refused``  pullback raised one of its own errors (``PullbackError``), such as
  ``UnsupportedSyntaxError``, ``MissingRuleError`` or ``NumbaCompileError``;
* ``mutated``  an argument changed during ``grad``/``value_and_grad``/``vjp``;
* ``wrong``    a value or gradient differs from the reference;
* ``crash``    any other exception.

``discard`` marks a program that cannot be judged: the primal raises, is not
finite, a min/max/abs meets a tie, or finite differences are unstable (a branch
or kink close to the arguments).

A program comes with a second argument set whose arrays have another length
(``Program.other_args``).  The functions made by ``value_and_grad`` and
``grad`` are called on it after the first set, so their second call reuses
what the first one built and compiled (pullback's cache, Numba's
specialisation) with arrays of another size.  Where that set cannot be judged,
only the first is.

Every judged argument set is also differentiated by the reference derivative
(``pullback.core.optimise``: every optimisation off, on the Python backend),
which the optimised one, on either backend, must equal to 1e-12 of its largest entry (``tests/reference.py``): "wrong" too
when it is not, however close both are to finite differences.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import importlib.util
import math
import re
import sys
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from reference import differs

import pullback
from pullback.backends import batch_loop
from pullback.backends.lazy_numba import _as_python
from pullback.core import optimise
from pullback.core.errors import InternalError
from pullback.trees import aux_seed, output_leaves, output_value

from .grammar import Program

# The order of badness: a case's outcome is the worst of its entry points'.
SEVERITY = ("discard", "correct", "refused", "mutated", "wrong", "crash")
FAILURES = ("mutated", "wrong", "crash")

STEP = 4e-3            # the largest difference step, relative to max(1, |x|)
STABLE = 1e-7          # central differences at two step sizes must agree this closely...
KINK = 1e-4            # ... and one-sided ones from the left and the right this closely
GRAD_RTOL = 1e-5       # pullback's gradient must agree with the reference this closely
VALUE_RTOL = 1e-9
LARGEST = 1e8          # values beyond this leave too few digits for differences


@dataclass(frozen=True)
class Outcome:
    kind: str
    entry: str = ""
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.kind in FAILURES

    @property
    def signature(self) -> str:
        """The kind of failure, without the names and numbers of one program:
        ``crash: NameError: name '_' is not defined``, ``wrong: gradient``."""
        if self.kind == "wrong":
            return "wrong: " + self.detail.split(" ")[0]
        if self.kind not in ("crash", "refused"):
            return self.kind
        text = re.sub(r" \([^()]*:\d+\)$", "", self.detail)          # where it was raised
        text = re.sub(r"'[^']*'|`[^`]*`|0x[0-9a-f]+", "'_'", text.replace(" (jit=True)", ""))
        return f"{self.kind}: " + re.sub(r"\d+(\.\d+)?", "N", text)[:160]

    def __str__(self) -> str:
        head = self.kind.upper() + (f" in {self.entry}" if self.entry else "")
        return head + (f": {self.detail}" if self.detail else "")


def worst(outcomes) -> Outcome:
    return max(outcomes, key=lambda o: SEVERITY.index(o.kind))


# ------------------------------------------------------------------ loading
def load(program: Program, directory: Path):
    """Write the program to a real module file and import it.

    pullback reads functions through ``inspect.getsource``, which needs a file;
    the name is a hash of the source, so every program gets its own module (and
    its own code object, hence its own entry in pullback's cache).
    """
    digest = hashlib.sha1(program.source.encode()).hexdigest()[:16]
    name = f"fuzzprog_{digest}"
    if name not in sys.modules:
        path = Path(directory) / f"{name}.py"
        path.write_text(program.source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    fn = getattr(sys.modules[name], program.name)
    fn.fuzz_has_aux = program.has_aux       # what call() reads: it returns (loss, aux)
    return fn


def enter(fn, state: int) -> None:
    """Set the values ``fn`` reads from outside its arguments (its module's globals,
    its closure cells) to those of ``state``: the module's ``set_state`` (see
    Program.states).  Nothing when it reads none."""
    set_state = getattr(sys.modules[fn.__module__], "set_state", None)
    if set_state is not None:
        set_state(state)


def fresh(args) -> list:
    """Copies of the arguments, so that no call sees another's writes."""
    return [copy.deepcopy(a) for a in args]


# ------------------------------------------------------------------ references
def call(fn, args) -> float | None:
    """The primal value at these arguments, or None when it is not usable."""
    out = evaluate(fn, args)
    return None if out is None else out[0]


def evaluate(fn, args) -> tuple[float, object] | None:
    """``(value, aux)`` at these arguments (aux None unless f returns ``(loss,
    aux)``), or None when the value is not usable."""
    try:
        with np.errstate(all="ignore"):
            out = fn(*fresh(args))
    except (ArithmeticError, ValueError):
        return None            # math domain errors, overflow: not a case to judge
    value, aux = out if getattr(fn, "fuzz_has_aux", False) else (out, None)
    aux = copy.deepcopy(aux)    # it may be a global array, which changes in place later
    value = float(value)
    return (value, aux) if math.isfinite(value) and abs(value) < LARGEST else None


def partial(fn, args, value: float, i: int, idx, h: float) -> float | None:
    """d f / d args[i][idx], or None when differences cannot be trusted here.

    f is evaluated at x +- h, h/2, h/4, h/8.  Central differences D(s) are
    Richardson-extrapolated, (4 D(s/2) - D(s)) / 3, which cancels the s**2
    error term, at s = h and at s = h/4; the two must agree (a branch threshold
    within reach makes them differ).  One-sided differences, extrapolated the
    same way, must agree from the left and from the right: at a kink such as
    abs(0) or a tie in max, central differences are stable but meaningless.
    """
    def at(delta):
        moved = fresh(args)
        if idx is None:
            moved[i] = moved[i] + delta
        else:
            moved[i][idx] += delta
        return call(fn, moved)
    steps = (h, h / 2, h / 4, h / 8)
    up, down = [at(s) for s in steps], [at(-s) for s in steps]
    if None in up or None in down:
        return None
    central = [(u - d) / (2 * s) for u, d, s in zip(up, down, steps)]
    wide, narrow = (4 * central[1] - central[0]) / 3, (4 * central[3] - central[2]) / 3
    right = [(u - value) / s for u, s in zip(up, steps)]
    left = [(value - d) / s for d, s in zip(down, steps)]
    right_ext, left_ext = 2 * right[3] - right[2], 2 * left[3] - left[2]
    scale = max(1.0, abs(narrow))
    if abs(wide - narrow) > STABLE * scale or abs(right_ext - left_ext) > KINK * scale:
        return None
    return narrow


def fd_gradient(fn, args, value: float, wrt) -> list | None:
    """Finite-difference gradients for each parameter in ``wrt``, or None when
    any partial derivative cannot be trusted."""
    grads = []
    for i in wrt:
        x = args[i]
        g = np.zeros(np.shape(x))
        for idx in (np.ndindex(np.shape(x)) if np.ndim(x) else [None]):
            d = partial(fn, args, value, i, idx, STEP * max(1.0, abs(float(x if idx is None else x[idx]))))
            if d is None:
                return None
            g[() if idx is None else idx] = d
        grads.append(float(g) if np.ndim(x) == 0 else g)
    return grads


@dataclass(frozen=True)
class Reference:
    value: float
    grads: list
    aux: object = None          # the plain call's aux, where f returns (loss, aux)


def reference(fn, args, wrt) -> Reference | None:
    out = evaluate(fn, args)
    if out is None:
        return None
    value, aux = out
    grads = fd_gradient(fn, args, value, wrt)
    return None if grads is None else Reference(value, grads, aux)


# Shadows of the kinked functions the grammar uses, recording whether a call
# meets a tie (or abs a zero).
TIE_PRELUDE = '''import builtins as _builtins
import numpy as _np

TIES = []


def _min(a, b):
    TIES.append(a == b)
    return _builtins.min(a, b)


def _max(a, b):
    TIES.append(a == b)
    return _builtins.max(a, b)


def _abs(x):
    TIES.append(x == 0)
    return _builtins.abs(x)


def _np_max(a):
    TIES.append(_np.count_nonzero(a == _np.max(a)) > 1)
    return _np.max(a)


'''


def meets_tie(program: Program, directory: Path, args: tuple | None = None,
              state: int = 0) -> bool:
    """Whether a min, max, abs or np.max meets a tie at ``args`` (by default the
    program's first argument set), the values read from outside at ``state``.

    There pullback returns a subgradient by its convention (as JAX and PyTorch
    do), which finite differences cannot judge, even where f itself is smooth:
    ``min(np.max(p), p[0])`` is ``p[0]`` wherever ``p[0]`` is the maximum.
    """
    source = re.sub(r"\bnp\.max\(", "_np_max(", program.source)
    source = re.sub(r"(?<![\w.])(min|max|abs)\(", r"_\1(", source)
    fn = load(dataclasses.replace(program, source=TIE_PRELUDE + source), directory)
    enter(fn, state)
    ties = sys.modules[fn.__module__].TIES
    ties.clear()
    call(fn, program.args if args is None else args)
    return any(ties)


# ------------------------------------------------------------------ comparisons
def value_error(value, ref: Reference) -> str | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return f"value {value!r} is not a float"
    if not abs(v - ref.value) <= VALUE_RTOL * max(1.0, abs(ref.value)):
        return f"value {v!r}, expected {ref.value!r}"
    return None


def grad_error(grads, ref: Reference, wrt) -> str | None:
    scale = max([1.0] + [float(np.max(np.abs(g))) for g in ref.grads])
    tol = GRAD_RTOL * scale + 1e-9 * abs(ref.value)
    for g, expected, i in zip(grads, ref.grads, wrt):
        got = np.asarray(g, dtype=float)
        if got.shape != np.shape(expected):
            return f"gradient of argument {i} has shape {got.shape}, expected {np.shape(expected)}"
        if not np.all(np.abs(got - expected) <= tol):
            return f"gradient of argument {i} is {np.round(got, 6)}, expected {np.round(expected, 6)}"
    return None


def aux_error(aux, expected) -> str | None:
    """Why ``aux`` is not the plain call's ``expected``: a dict, tuple or list of the
    same structure, the same strings, numbers and arrays to VALUE_RTOL."""
    def wrong():
        return f"aux {aux!r}, expected {expected!r}"
    if isinstance(expected, dict):
        if not isinstance(aux, dict) or sorted(aux) != sorted(expected):
            return wrong()
        return next(filter(None, (aux_error(aux[k], expected[k]) for k in expected)), None)
    if isinstance(expected, (tuple, list)):
        if not isinstance(aux, (tuple, list)) or len(aux) != len(expected):
            return wrong()
        return next(filter(None, (aux_error(a, e) for a, e in zip(aux, expected))), None)
    if isinstance(expected, str) or expected is None:
        return None if aux == expected else wrong()
    try:
        a, b = np.asarray(aux, dtype=float), np.asarray(expected, dtype=float)
    except (TypeError, ValueError):
        return wrong()
    if a.shape != b.shape or not np.allclose(a, b, rtol=VALUE_RTOL, atol=VALUE_RTOL,
                                             equal_nan=True):
        return wrong()
    return None


def mutation(args, before) -> str | None:
    for i, (a, b) in enumerate(zip(args, before)):
        if isinstance(b, np.ndarray) and not np.array_equal(a, b):
            return f"argument {i} changed from {b} to {a}"
    return None


def describe(exc: BaseException) -> str:
    """The exception and the innermost frame it came from (for a Numba
    compile error, the line of Numba's report that says why)."""
    frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" ({Path(frame[0].filename).name}:{frame[0].lineno})" if frame else ""
    lines = str(exc).strip().splitlines() or [""]
    first = lines[0]
    if first.endswith("Numba reported:"):
        first = re.sub(r"( at the code generated for .*)?\.? Numba reported:$", "", first)
        first += ": " + numba_reason(lines[1:])
    return f"{type(exc).__name__}: {first}{where}"


def numba_reason(report: list[str]) -> str:
    """The first line of Numba's report past its 'Failed in ... pipeline' headers,
    and the pullback rule it was typing, if any."""
    reason = next((line.strip() for line in report if line.strip()
                   and not re.match(r"(\w+Error: )?Failed in ", line.strip())), "")
    rule = re.search(r"pullback/rules/\w+\.py.*?\n(def \w+)", "\n".join(report), re.DOTALL)
    return reason + (f" [{rule.group(1)}]" if rule else "")


# ------------------------------------------------------------------ entry points
def guarded(entry: str, body) -> Outcome:
    """Run one entry point's check, turning exceptions into outcomes."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            problem = body()
    except pullback.PullbackError as exc:
        if isinstance(exc, InternalError):      # a bug in pullback, which says so
            return Outcome("crash", entry, describe(exc))
        return Outcome("refused", entry, describe(exc))
    except Exception as exc:                     # noqa: BLE001 - any other error is a crash
        return Outcome("crash", entry, describe(exc))
    return Outcome(problem[0], entry, problem[1]) if problem else Outcome("correct", entry)


def split(out, has_aux: bool) -> tuple:
    """``(value, grads, aux)`` of what value_and_grad returned: ``((value, aux),
    grads)`` with has_aux, else ``(value, grads)`` (aux None)."""
    if has_aux:
        (value, aux), grads = out
        return value, grads, aux
    return out[0], out[1], None


def first_problem(*checks) -> tuple[str, str] | None:
    for kind, message in checks:
        if message:
            return kind, message
    return None


@dataclass(frozen=True)
class Case:
    """One argument set and its reference; ``label`` names it in a report."""

    args: tuple
    ref: Reference
    label: str = ""
    state: int = 0          # of the values read from outside the arguments (Program.states)


def labelled(problem: tuple[str, str] | None, case: Case) -> tuple[str, str] | None:
    """``problem`` with the argument set it was seen on, if that is not the first."""
    if problem is None or not case.label:
        return problem
    return problem[0], f"{problem[1]} {case.label}"


def check_value_and_grad(fn, program: Program, cases: list[Case], jit: bool) -> Outcome:
    """value_and_grad, called twice on the first argument set (the second call
    must agree with the first: a derivative that keeps state between calls
    would not), then once on each other set."""
    def body():
        g = pullback.value_and_grad(fn, argnums=program.wrt, jit=jit, has_aux=program.has_aux)
        for case in [cases[0]] + cases:
            enter(fn, case.state)
            args = fresh(case.args)
            before = fresh(args)
            value, grads, aux = split(g(*args), program.has_aux)
            problem = first_problem(("mutated", mutation(args, before)),
                                    ("wrong", value_error(value, case.ref)),
                                    ("wrong", aux_error(aux, case.ref.aux)),
                                    ("wrong", grad_error(grads, case.ref, program.wrt)))
            if problem:
                return labelled(problem, case)
        return None
    return guarded("value_and_grad", body)


def check_grad(fn, program: Program, cases: list[Case], jit: bool) -> Outcome:
    """grad, called on each argument set in turn."""
    def body():
        g = pullback.grad(fn, argnums=program.wrt, jit=jit, has_aux=program.has_aux)
        for case in cases:
            enter(fn, case.state)
            args = fresh(case.args)
            before = fresh(args)
            grads, aux = g(*args) if program.has_aux else (g(*args), None)
            problem = first_problem(("mutated", mutation(args, before)),
                                    ("wrong", aux_error(aux, case.ref.aux)),
                                    ("wrong", grad_error(grads, case.ref, program.wrt)))
            if problem:
                return labelled(problem, case)
        return None
    return guarded("grad", body)


def check_vjp(fn, program: Program, ref: Reference, jit: bool) -> Outcome:
    """vjp, then its ``back`` twice; ``None`` is the cotangent of an int.  (At the
    first argument set and state 0.)"""
    def body():
        enter(fn, 0)
        args = fresh(program.args)
        before = fresh(args)
        value, back, *aux = pullback.vjp(fn, *args, jit=jit, has_aux=program.has_aux)
        problem = first_problem(("mutated", mutation(args, before)), ("wrong", value_error(value, ref)),
                                ("wrong", aux_error(aux[0] if aux else None, ref.aux)))
        if problem:
            return problem
        for _ in range(2):
            cot = back(1.0)
            ints = [i for i in range(len(args)) if i not in program.wrt]
            problem = first_problem(
                ("mutated", mutation(args, before)),
                ("wrong", next((f"cotangent of int argument {i} is {cot[i]!r}" for i in ints
                                if cot[i] is not None), None)),
                ("wrong", grad_error([cot[i] for i in program.wrt], ref, program.wrt)))
            if problem:
                return problem
        return None
    return guarded("vjp", body)


def check_reference(fn, program: Program, cases: list[Case], jit: bool) -> Outcome:
    """value_and_grad against the reference derivative's on each argument set (every
    optimisation off, the Python backend), to 1e-12 (an aux to VALUE_RTOL: Numba may
    round it otherwise); under jit=True also the Python backend's own (optimised)
    derivative, and the Numba derivative's code run as Python, the interim path of
    the default background-compile mode (LazyNumba.python).

    The derivatives compared are generated before the reference is: a derivative
    is generated at its first call, with the optimisations current then, so one
    first called inside ``optimise.reference()`` would be the reference itself."""
    aux = program.has_aux

    def body():
        optimised = pullback.value_and_grad(fn, argnums=program.wrt, jit=jit, has_aux=aux)
        python = pullback.value_and_grad(fn, argnums=program.wrt, jit=False, has_aux=aux) \
            if jit else None
        # Generated here, outside the reference block (see above).
        compiled = [g.compiled(*fresh(cases[0].args))[0] for g in (optimised, python) if g]
        # Made before the other checks run: a call that ran compiled leaves the
        # dispatcher.  ``python``, not ``as_python``: a read of an unassigned
        # variable must show here, not be answered by the compiled code.
        tier = interim(compiled[0], aux) if jit else None     # (None: none found)
        with optimise.reference():
            plain = pullback.value_and_grad(fn, argnums=program.wrt, jit=False, has_aux=aux)
            wants = []
            for case in cases:
                enter(fn, case.state)
                # (Copied: an aux may be a global array, changed in place later.)
                wants.append(copy.deepcopy(split(plain(*fresh(case.args)), aux)))
        theirs = [("optimised", optimised), ("the Python backend's derivative", python),
                  ("the Numba derivative run as Python", tier)]
        for case, want in zip(cases, wants):
            enter(fn, case.state)
            for name, g in theirs:
                if g is None:
                    continue
                got = split(g(*fresh(case.args)), aux)
                why = differs(got[:2], want[:2]) or aux_error(got[2], want[2])
                if why:
                    return labelled(("wrong", f"{name} against the reference derivative: "
                                              f"{why}"), case)
        return None
    return guarded("reference", body)


def interim(compiled, has_aux: bool):
    """The Numba derivative's code run as Python (LazyNumba.python), called as
    value_and_grad calls it: the seed of a has_aux result (the loss's cotangent,
    zeros for the aux's leaves), its value rebuilt from the leaves.

    ``compiled.fn`` is the LazyNumba until a call ran compiled, then what it
    dispatches to (the API takes that): a wrapper naming its LazyNumba (``lazy``),
    or Numba's dispatcher itself where the derivative takes no workspace and no
    live value (a program whose source an earlier one had: the same module)."""
    fn = compiled.fn
    lazy = fn if hasattr(fn, "python") else getattr(fn, "lazy", None)
    if lazy is not None:
        tier = lazy.python
    elif hasattr(fn, "py_func"):
        tier = _as_python(fn.py_func)
    elif hasattr(fn, "dispatcher"):     # a wrapper naming its dispatcher alone (older
        return None                     # pullback): no tier to be found, none checked
    else:
        raise AssertionError(f"no Python tier to be found from {fn!r}")
    if not has_aux:
        return tier
    seed = aux_seed(1, output_leaves(compiled, "f", "value_and_grad"), 1.0)

    def call(*args):
        value, grads = tier(*args, seed)
        return output_value(compiled, value), grads
    return call


def inner_product(vectors, directions) -> tuple[float, float]:
    """``(sum of <vector, direction>, scale)``, the scale bounding the sum's rounding:
    the largest term times the number of entries it stands for, and at least the
    direction's own size: a partial derivative that is 0 because terms of order 1
    cancel (``-(x + 1.0) + x``) is exactly 0 in the gradient, while jvp's tangent
    carries the rounding of those terms (a CI run: 6.7e-16 against 0.0)."""
    terms = [np.asarray(v, dtype=float) * d for v, d in zip(vectors, directions)]
    sizes = [float(np.max(np.abs(t), initial=0.0)) * max(np.size(t), 1)
             for t in terms + [np.asarray(d, dtype=float) for d in directions]]
    return sum(float(np.sum(t)) for t in terms), max(sizes, default=0.0)


#: Forward against reverse mode: <J v> from jvp against <grad, v> from the gradient,
#: relative to the largest term of the sum (both are exact up to rounding).
JVP_RTOL = 1e-12


def check_jvp(fn, program: Program, cases: list[Case], jit: bool) -> Outcome:
    """Forward mode is the reverse mode's oracle: the tangent ``jvp`` gives along a
    random direction equals the gradient's inner product with that direction, which
    catches a wrong term too small for finite differences to see."""
    def body():
        g = pullback.value_and_grad(fn, argnums=program.wrt, jit=jit, has_aux=program.has_aux)
        rng = np.random.default_rng(len(program.source))
        # One differentiated argument held fixed (a None tangent) when there are
        # several: a value written into it must still get its tangent.
        held = int(rng.choice(program.wrt)) if len(program.wrt) > 1 else None
        for case in cases:
            direction = [rng.normal(size=np.shape(a)) if i in program.wrt and i != held
                         else None for i, a in enumerate(case.args)]
            direction = [float(d) if d is not None and np.ndim(d) == 0 else d for d in direction]
            enter(fn, case.state)
            value, tangent, *aux = pullback.jvp(fn, tuple(fresh(case.args)), tuple(direction),
                                                jit=jit, has_aux=program.has_aux)
            _, grads, _ = split(g(*fresh(case.args)), program.has_aux)
            expected, scale = inner_product([gr for gr, i in zip(grads, program.wrt)
                                             if i != held],
                                            [direction[i] for i in program.wrt if i != held])
            problem = first_problem(
                ("wrong", value_error(value, case.ref)),
                ("wrong", aux_error(aux[0] if aux else None, case.ref.aux)),
                ("wrong", None if abs(tangent - expected) <= JVP_RTOL * scale + 1e-300
                 or not np.isfinite(expected) else
                 f"jvp's tangent {tangent!r} against the gradient's <grad, v> {expected!r}"))
            if problem:
                return labelled(problem, case)
        return None
    return guarded("jvp", body)


#: Second order: <u, H v> against <v, H u>, and grad of grad against hvp, relative
#: to the largest term (both sides are exact up to rounding, along different code).
HESSIAN_RTOL = 1e-9


def check_second_order(fn, program: Program, cases: list[Case], jit: bool) -> Outcome:
    """Reverse mode over forward mode: the Hessian is symmetric (<u, H v> equals
    <v, H u> for random u, v), and, for a number among the differentiated arguments,
    ``grad(grad(f, i))`` (a generated forward program differentiated again) is the
    Hessian's row i, which ``hvp`` along e_i gives.  The Python backend only: the
    second-order programs are the same transforms' output, and compiling them
    with Numba would double a Numba program's time.  A refusal of second order is
    not counted: first order is judged by the other checks."""
    def body():
        if jit or program.has_aux:          # (hvp and hessian have no has_aux)
            return None
        enter(fn, cases[0].state)
        args, wrt = cases[0].args, program.wrt
        rng = np.random.default_rng(len(program.source) + 1)

        def direction():
            return tuple((float(rng.normal()) if np.ndim(a) == 0 else rng.normal(size=np.shape(a)))
                         if i in wrt else None for i, a in enumerate(args))

        def hvp(tangents):
            return pullback.hvp(fn, tuple(fresh(args)), tangents)

        def inner(h, d):
            return inner_product([h[i] for i in wrt], [d[i] for i in wrt])
        try:
            u, v = direction(), direction()
            (a, scale_a), (b, scale_b) = inner(hvp(v), u), inner(hvp(u), v)
            if np.isfinite(a) and np.isfinite(b) and \
                    abs(a - b) > HESSIAN_RTOL * max(scale_a, scale_b) + 1e-300:
                return "wrong", f"<u, H v> {a!r} against <v, H u> {b!r}"
            scalars = [i for i in wrt if np.ndim(args[i]) == 0]
            if not scalars:
                return None
            i = scalars[0]
            row = pullback.grad(pullback.grad(fn, i), argnums=wrt)(*fresh(args))
            column = hvp(tuple((1.0 if k == i else np.zeros_like(a, dtype=float)
                                if np.ndim(a) else 0.0) if k in wrt else None
                               for k, a in enumerate(args)))
            for r, k in zip(row, wrt):
                want = np.asarray(column[k], dtype=float)
                got = np.asarray(r, dtype=float)
                finite = np.isfinite(want) & np.isfinite(got)
                scale = float(np.max(np.abs(want[finite]), initial=0.0))
                if np.any(np.abs(got - want)[finite] > HESSIAN_RTOL * scale + 1e-300):
                    return "wrong", (f"grad(grad(f, {i})) {got!r} against hvp along e_{i} "
                                     f"{want!r} (argument {k})")
        except pullback.PullbackError as exc:
            if isinstance(exc, InternalError):
                raise
            return None
        return None
    return guarded("second order", body)


def check_sparsity(fn, program: Program, cases: list[Case], jit: bool) -> Outcome:
    """The pattern traced on index sets (``pullback.sparsity``) holds every nonzero
    of the gradient in each 1-D array argument, and the sparse Jacobian of the
    scalar (one row, its columns coloured) is the gradient.  The Python backend
    only (the trace runs there whatever the backend)."""
    def body():
        if jit or program.has_aux:
            return None
        case = cases[0]
        enter(fn, case.state)
        _, grads, _ = split(pullback.value_and_grad(fn, argnums=program.wrt)(
            *fresh(case.args)), False)
        for g, i in zip(grads, program.wrt):
            if np.ndim(case.args[i]) != 1 or np.size(case.args[i]) < 1:
                continue
            enter(fn, case.state)
            pattern = pullback.sparsity(fn, argnums=i)(*fresh(case.args)).toarray()
            missing = np.nonzero((np.asarray(g) != 0) & ~pattern[0])[0]
            if missing.size:
                return "wrong", (f"sparsity misses entries {missing.tolist()} of the gradient "
                                 f"in argument {i}")
            enter(fn, case.state)
            row = pullback.jacfwd(fn, argnums=i, sparse=True)(*fresh(case.args)).toarray()[0]
            scale = float(np.max(np.abs(g), initial=0.0))
            if np.any(np.abs(row - g) > 1e-12 * scale + 1e-300):
                return "wrong", f"the sparse Jacobian {row!r} against the gradient {g!r}"
        return None
    return guarded("sparsity", body)


def check_vmap(fn, program: Program, cases: list[Case], jit: bool) -> Outcome:
    """``vmap`` of ``value_and_grad`` over three argument sets (the first, and two
    with its float arguments nudged; ints passed whole) gives the three calls'
    values and gradients: under jit=True from the compiled batch loop, which calls
    each example's derivative with its tape workspace and the values read from
    outside the arguments."""
    def body():
        if program.has_aux:
            return None
        case = cases[0]
        rng = np.random.default_rng(len(program.source) + 2)
        floats = [i for i, a in enumerate(case.args)
                  if isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f")]
        sets = [fresh(case.args)]
        for _ in range(2):
            nudged = fresh(case.args)
            for i in floats:
                nudged[i] = nudged[i] + 1e-3 * (rng.normal(size=np.shape(nudged[i]))
                                                if np.ndim(nudged[i]) else rng.normal())
            sets.append(nudged)
        g = pullback.value_and_grad(fn, argnums=program.wrt, jit=jit)
        enter(fn, case.state)
        try:
            singles = [g(*fresh(s)) for s in sets]
        except pullback.PullbackError:
            raise
        except Exception:       # noqa: BLE001 - a nudged set the program cannot take
            return None
        batch = [np.stack([np.asarray(s[i], dtype=float) for s in sets]) if i in floats
                 else case.args[i] for i in range(len(case.args))]
        axes = tuple(0 if i in floats else None for i in range(len(case.args)))
        ran = []
        real = batch_loop.run
        batch_loop.run = lambda *a: ran.append(real(*a)) or ran[-1]
        try:
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                values, grads = pullback.vmap(g, in_axes=axes)(*batch)
        finally:
            batch_loop.run = real
        if jit and ran != [True]:
            return "crash", "the compiled batch loop did not run: " + "; ".join(
                str(w.message) for w in said if "compiled loop over a batch" in str(w.message))
        for b, (value, single) in enumerate(singles):
            why = differs(values[b], value) or differs(tuple(gr[b] for gr in grads),
                                                       tuple(single))
            if why:
                return "wrong", f"vmap's example {b} against its own call: {why}"
        return None
    return guarded("vmap", body)


def check_torch(fn, program: Program, cases: list[Case], jit: bool) -> Outcome | None:
    """``pullback.torch.function(f)`` on each argument set, its float arguments as
    float64 tensors (those differentiated requiring grad): the value and the tensors'
    gradients after ``backward()`` are the reference's.  None without PyTorch, or for
    a program with an aux."""
    if importlib.util.find_spec("torch") is None or program.has_aux:
        return None
    import torch

    import pullback.torch as pt

    def body():
        F = pt.function(fn, jit=jit)
        for case in cases:
            enter(fn, case.state)
            args = [torch.tensor(a, dtype=torch.float64, requires_grad=i in program.wrt)
                    if isinstance(a, float) or isinstance(a, np.ndarray) and a.dtype.kind == "f"
                    else a for i, a in enumerate(fresh(case.args))]
            value = F(*args)
            value.backward()
            problem = first_problem(
                ("wrong", value_error(value.item(), case.ref)),
                ("wrong", grad_error([args[i].grad.numpy() for i in program.wrt], case.ref,
                                     program.wrt)))
            if problem:
                return labelled(problem, case)
        return None
    return guarded("pullback.torch.function", body)


def judged(fn, program: Program, args: tuple, directory: Path, state: int = 0) -> Reference | None:
    """The reference at ``args`` and ``state`` (of the values read from outside the
    arguments), or None where it cannot be trusted."""
    enter(fn, state)
    if meets_tie(program, directory, args, state) or grows_huge(fn, args):
        return None
    return reference(fn, args, program.wrt)


#: Past this, a value's rounding swamps what a finite-difference step changes
#: (about 2e-16 * HUGE / 1e-6 = 0.02): ``u -= (0.5 + u * u) ** 1.5`` in a loop
#: reaches 5e30, and ``sqrt(0.25 + u * u) + u`` then cancels to a value of order 1
#: that no step of an input moves, so differences say 0 where the derivative is 1.
HUGE = 1e8


def grows_huge(fn, args) -> bool:
    """Whether a float, or an entry of a float array, in a frame of the program's
    file (f and its helpers) exceeds HUGE in magnitude while ``fn(*args)`` runs."""
    found = []
    filename = fn.__code__.co_filename

    def in_frame(frame, event, arg):
        for v in frame.f_locals.values():
            if isinstance(v, float) and abs(v) > HUGE:
                found.append(v)
            elif isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.size \
                    and not np.all(np.abs(v) <= HUGE):
                found.append(v)
        return in_frame

    def calls(frame, event, arg):
        return in_frame if frame.f_code.co_filename == filename else None

    before = sys.gettrace()
    sys.settrace(calls)
    try:
        call(fn, args)
    finally:
        sys.settrace(before)
    return bool(found)


def check(program: Program, jit: bool, directory: Path) -> Outcome:
    """The outcome of one program on one backend (``discard`` if its first
    argument set cannot be judged)."""
    fn = load(program, directory)
    ref = judged(fn, program, program.args, directory)
    if ref is None:
        return Outcome("discard")
    cases = [Case(program.args, ref)]
    if program.other_args is not None:
        other = judged(fn, program, program.other_args, directory)
        if other is not None:
            cases.append(Case(program.other_args, other, "(on the second argument set, other length)"))
    # Then the values f reads from outside its arguments change, and the gradient
    # functions, called before, are called again at the first argument set.
    for state in range(1, program.states):
        moved = judged(fn, program, program.args, directory, state)
        if moved is not None:
            cases.append(Case(program.args, moved, STATE_LABELS[state], state))
    checks = [check_reference(fn, program, cases, jit),
              check_value_and_grad(fn, program, cases, jit),
              check_grad(fn, program, cases, jit),
              check_vjp(fn, program, ref, jit),
              check_vmap(fn, program, cases, jit)]
    checks += [c for c in [check_torch(fn, program, cases, jit)] if c is not None]
    if not program.constructs & NO_FORWARD_MODE:
        checks += [check_jvp(fn, program, cases, jit), check_second_order(fn, program, cases, jit),
                   check_sparsity(fn, program, cases, jit)]
    return worst(checks)


#: Constructs without forward mode, whose programs jvp refuses: a rule given by its
#: VJP alone (rule_tuple), a custom_vjp function.
NO_FORWARD_MODE = frozenset({"rule_tuple", "custom_vjp"})

STATE_LABELS = {1: "(after the values f reads from outside its arguments changed: numbers "
                   "rebound, arrays changed in place)",
                2: "(after the values f reads from outside its arguments were rebound again)"}
