"""Checks of the fuzz harness itself: the grammar makes programs whose primal
runs, the finite differences are accurate where they answer and refuse to
answer at kinks and branch thresholds, and the feature profiles are consistent.
None of this calls pullback's derivatives, so a failure here is the harness's."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings

from .features import (
    BACKENDS,
    FEATURES,
    KNOWN_BROKEN,
    KNOWN_BROKEN_NUMBA,
    KNOWN_BROKEN_PYTHON,
    UNSUPPORTED_NUMBA,
    ci_features,
    parse_features,
)
from .grammar import (
    CUSTOM_PARAMS,
    CUSTOM_TEMPLATES,
    STATES,
    Program,
    custom_function,
    format_args,
    paths,
    programs,
    rebuild,
)
from .oracle import (
    Outcome,
    aux_error,
    enter,
    fd_gradient,
    grows_huge,
    judged,
    load,
    meets_tie,
    partial,
    worst,
)
from .oracle import call as call_f


# ------------------------------------------------------------------ grammar
@seed(10)
@settings(max_examples=150, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=programs(frozenset(FEATURES)))
def test_programs_run(program, tmp_path_factory):
    """Every generated primal either runs or fails with an arithmetic error
    (overflow, math domain), never with an error of the generator's making:
    an unbound name, an index out of range, a bad type."""
    fn = load(program, tmp_path_factory.getbasetemp())
    for args in (program.args, program.other_args):
        try:
            with np.errstate(all="ignore"):
                fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        except ArithmeticError:
            pass
        except ValueError as exc:     # a broadcast of mismatched lengths is the grammar's fault
            assert "math domain" in str(exc), exc
        value = call_f(fn, args)
        assert value is None or math.isfinite(value)
    lengths = {len(a) for args in (program.args, program.other_args)
               for a in args if isinstance(a, np.ndarray)}
    assert len(lengths) == 2      # the two sets differ in the arrays' length
    assert program.wrt == tuple(i for i, a in enumerate(program.args) if not isinstance(a, int))
    assert program.constructs <= set(FEATURES)


@seed(10)
@settings(max_examples=100, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=programs(frozenset()))
def test_no_features_means_plain_code(program):
    """With every feature off, only assignments and arithmetic remain."""
    assert program.constructs == set()
    for word in ("for ", "while ", "if ", "helper", "np.zeros", "**"):
        assert word not in program.source.split('"""')[-1]


def test_format_args_round_trips():
    args = (0.25, np.array([1.0, -0.5]), 3)
    assert [np.array_equal(a, b) for a, b in zip(eval(format_args(args)), args)] == [True] * 3


# ------------------------------------------------------------------ oracle
def smooth(x, p):
    return math.sin(x) * np.sum(p * p) + math.exp(p[0])


def test_fd_gradient_is_accurate():
    p = np.array([0.3, -0.7])
    got = fd_gradient(smooth, (0.4, p), smooth(0.4, p), (0, 1))
    assert got[0] == pytest.approx(math.cos(0.4) * np.sum(p * p), rel=1e-9)
    np.testing.assert_allclose(got[1], 2 * math.sin(0.4) * p + [math.exp(p[0]), 0.0], rtol=1e-9)


@pytest.mark.parametrize("fn, x", [
    (abs, 0.0),                                  # a kink: central differences say 0
    (lambda x: max(x, 0.0), 0.0),                # a kink: central differences say 0.5
    (lambda x: x if x > 0.5 else 2.0 * x, 0.5),  # a branch threshold
    (lambda x: x if x > 0.5 else x + 1e-3, 0.501),   # a jump within reach
])
def test_fd_refuses_kinks_and_thresholds(fn, x):
    assert partial(fn, [x], fn(x), 0, None, 4e-3) is None


def test_fd_answers_beside_a_kink():
    assert partial(abs, [-0.3], 0.3, 0, None, 4e-3) == pytest.approx(-1.0, rel=1e-12)


@pytest.mark.parametrize("body, args, tie", [
    ("return min(np.max(p), p[0])", (np.array([0.7, 0.2]),), True),
    ("return min(np.max(p), p[1])", (np.array([0.7, 0.2]),), False),
    ("return max(p[0], p[1]) + abs(p[0] - 0.7)", (np.array([0.7, 0.2]),), True),
    ("return np.max(p) + abs(p[1])", (np.array([0.7, 0.7]),), True),
    ("return np.maximum(p[0], p[1]) + maxi(p)", (np.array([0.7, 0.7]),), False),
])
def test_meets_tie(body, args, tie, tmp_path):
    source = f"import numpy as np\n\n\ndef maxi(p):\n    return 0.0\n\n\ndef f(p):\n    {body}\n"
    assert meets_tie(Program(source, args, (0,), frozenset()), tmp_path) == tie


def test_values_that_grow_huge_are_not_judged(tmp_path):
    # A CI run's program: u reaches -5e30, and sqrt(0.25 + u * u) + u - max(p) then
    # rounds away max(p), so differences said 0 where the derivative is -1.
    source = ("import math\n\nimport numpy as np\n\n\ndef f(p):\n    u = 1.0\n"
              "    for i in range(6):\n        u -= (0.5 + u * u) ** 1.5\n"
              "    return math.sqrt(0.25 + u * u) - np.max(p) + u\n")
    program = Program(source, (np.array([0.0, 0.01]),), (0,), frozenset())
    fn = load(program, tmp_path)
    assert grows_huge(fn, program.args)
    assert judged(fn, program, program.args, tmp_path) is None
    tame = Program(source.replace("range(6)", "range(1)"), program.args, (0,), frozenset())
    fn = load(tame, tmp_path)
    assert not grows_huge(fn, tame.args) and judged(fn, tame, tame.args, tmp_path) is not None


def test_worst_outcome_wins():
    kinds = ["correct", "refused", "mutated", "wrong", "crash"]
    outcomes = [Outcome(k) for k in kinds]
    assert worst(outcomes).kind == "crash"
    assert worst(outcomes[:2]).kind == "refused"
    assert [o.failed for o in outcomes] == [False, False, True, True, True]


def test_signature_drops_names_and_numbers():
    a = Outcome("crash", "grad", "NameError: name 'dx0' is not defined (<pullback f_grad #3>:11)")
    b = Outcome("crash", "grad", "NameError: name 'dp1' is not defined (<pullback f_grad #9>:40)")
    assert a.signature == b.signature == "crash: NameError: name '_' is not defined"


def test_load_gives_each_source_its_own_module(tmp_path):
    one = load(Program("def f(x):\n    return 2.0 * x\n", (1.0,), (0,), frozenset()), tmp_path)
    two = load(Program("def f(x):\n    return 3.0 * x\n", (1.0,), (0,), frozenset()), tmp_path)
    assert (one(1.0), two(1.0)) == (2.0, 3.0)


# ------------------------------------------------------------------ features
def test_known_broken_names_are_features():
    for table in (KNOWN_BROKEN, KNOWN_BROKEN_NUMBA, KNOWN_BROKEN_PYTHON):
        assert set(table) <= set(FEATURES)
        assert all(cause.startswith(("issue 10 cause", "new:")) for cause in table.values())
    assert set(UNSUPPORTED_NUMBA) <= set(FEATURES)


@pytest.mark.parametrize("backend", BACKENDS)
def test_ci_profile_leaves_out_exactly_the_known_broken(backend):
    off = set(KNOWN_BROKEN) | (set(KNOWN_BROKEN_NUMBA) | set(UNSUPPORTED_NUMBA)
                               if backend == "numba" else set(KNOWN_BROKEN_PYTHON))
    assert ci_features(backend) == set(FEATURES) - off


# ------------------------------------------------------------------ new constructs
@pytest.mark.parametrize("kind, template", [(k, t) for k, ts in CUSTOM_TEMPLATES.items()
                                            for t in range(len(ts))])
def test_custom_templates_give_their_derivatives(kind, template):
    """The partial derivatives a custom_vjp's bwd and a custom_jvp's rule return are
    those of the function (else a correct pullback would look wrong)."""
    body, partials = CUSTOM_TEMPLATES[kind][template]
    params = CUSTOM_PARAMS[kind]
    env = {"math": math, "np": np}
    fn = eval(f"lambda {', '.join(params)}: {body.replace('C', '0.75')}", env)
    rng = np.random.default_rng(template)
    args = tuple(rng.normal(size=3) if kind in ("norm", "vec") else float(rng.normal()) + 0.3
                 for _ in params)
    for k, d in enumerate(partials):
        got = 0.0 if d is None else eval(f"lambda {', '.join(params)}: {d.replace('C', '0.75')}",
                                         env)(*args)
        if kind == "vec":           # elementwise: the diagonal of the Jacobian
            def entry(j):
                return lambda *a: float(fn(*a)[j])
            fd = np.array([fd_gradient(entry(j), args, entry(j)(*args), (k,))[0][j]
                           for j in range(3)])
        else:
            def scalar(*a):
                return float(fn(*a))
            fd = fd_gradient(scalar, args, scalar(*args), (k,))[0]
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("decorator", ["custom_vjp", "custom_jvp"])
@pytest.mark.parametrize("residuals", [0, 1, 2])
def test_custom_functions_run(decorator, residuals, tmp_path):
    """Every custom function the grammar writes is valid Python, and its call is
    its template's function (its fwd/bwd or jvp rule are checked by the random
    programs against finite differences)."""
    for kind, templates in CUSTOM_TEMPLATES.items():
        for t in range(len(templates)):
            name = f"{kind}_{t}"
            lines = custom_function(name, decorator, kind, t, "0.5", residuals)
            params = ", ".join(CUSTOM_PARAMS[kind])
            source = ("import math\n\nimport numpy as np\n\nimport pullback\n\n\n"
                      + "\n".join(lines) + f"\n\n\ndef f({params}):\n    return {name}({params})\n")
            fn = load(Program(source, (), (), frozenset()), tmp_path)
            args = [np.array([0.3, -0.2]) if kind in ("norm", "vec") else 0.4
                    for _ in CUSTOM_PARAMS[kind]]
            want = eval(f"lambda {params}: {templates[t][0].replace('C', '0.5')}",
                        {"math": math, "np": np})
            np.testing.assert_allclose(fn(*args), want(*args))


def test_carry_shapes():
    shape = ["L", ["L", "L"]]
    assert paths(shape) == [(0,), (1, 0), (1, 1)]
    assert rebuild(shape, ["a", "b", "c"]) == "(a, (b, c))"
    assert rebuild(shape, ["a", "b", "c"], top=True) == "a, (b, c)"
    assert rebuild("L", ["a"]) == "a"


@seed(10)
@settings(max_examples=40, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=programs(frozenset({"global_values", "closure_values", "outside_tuple"})))
def test_outside_values_move_between_states(program, tmp_path_factory):
    """A program reading globals or closure cells has STATES states: set_state(1)
    changes an array in place (the object f read at state 0 is the one changed),
    set_state(2) rebinds it, set_state(0) brings every value back."""
    uses = program.constructs & {"global_values", "closure_values"}
    assert program.states == (STATES if uses else 1)
    if not uses:
        return
    fn = load(program, tmp_path_factory.getbasetemp())
    module = vars(sys.modules[fn.__module__])
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    names = list(cells) + [n for n in module if n[0] in "GWT" and n[1:].isdigit()]
    assert names

    def read(name):
        return cells[name].cell_contents if name in cells else module[name]
    seen = []
    for state in range(STATES):
        objects = {n: read(n) for n in names}
        enter(fn, state)
        if state == 1:
            assert all(read(n) is objects[n] for n in names if isinstance(read(n), np.ndarray))
        if state == 2:
            assert all(read(n) is not objects[n] for n in names if isinstance(read(n), np.ndarray))
        seen.append({n: np.copy(read(n)) for n in names})
        call_f(fn, program.args)
    enter(fn, 0)
    assert all(np.array_equal(read(n), seen[0][n]) for n in names)


def test_aux_error():
    assert aux_error({"a": 1.0, "s": "x"}, {"a": 1.0, "s": "x"}) is None
    assert aux_error({"a": 1.0}, {"b": 1.0})
    assert aux_error((1.0, np.ones(2)), (1.0, np.ones(2))) is None
    assert aux_error((1.0, np.ones(2)), (1.0, np.zeros(2)))
    assert aux_error("x", "y")
    assert aux_error(np.float64(2.0), 2.0 + 1e-12) is None


def test_parse_features():
    assert parse_features("all,-pow") == set(FEATURES) - {"pow"}
    assert parse_features("pow, kinks") == {"pow", "kinks"}
    with pytest.raises(ValueError, match="unknown fuzz feature"):
        parse_features("no_such_thing")
