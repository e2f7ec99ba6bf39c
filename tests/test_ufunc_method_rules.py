"""Rules on the methods of ufuncs (``np.maximum.accumulate``, ``np.add.reduce``,
``np.multiply.outer``): a bound method is made afresh at each attribute access, and
the registry knows it by its ufunc and name, so the rule is the one a call uses.
Numba does not compile these methods: under jit=True the call is refused, located.
``ufunc.at`` and the NumPy functions that write into an argument in place are
refused, as rules and as calls.

Every gradient is checked against central finite differences of the primal."""
import numba
import numpy as np
import pytest

import pullback
from helpers import assert_fd_close, fd_estimate
from pullback.pipeline import clear_cache
from pullback.rules import registry


@pytest.fixture
def registered():
    fns = []

    def register(fn, vjp):
        pullback.rule(fn)(vjp)
        fns.append(fn)
    yield register
    for fn in fns:
        registry.unregister(fn)
    clear_cache()


def running_max_vjp(g, ans, x):
    """g[i] goes to the first position of the running maximum at i (ties: the later)."""
    out = np.zeros_like(x)
    j = 0
    for i in range(x.shape[0]):
        if x[i] >= x[j]:
            j = i
        out[j] += g[i]
    return out


def running_max_loss(x):
    return np.sum(np.maximum.accumulate(x) ** 2 * np.arange(1.0, x.shape[0] + 1.0))


X = np.array([0.3, 1.0, 0.5, 2.0, 1.5, -0.7])


def test_the_registry_knows_a_ufunc_method_by_its_ufunc_and_name(registered):
    assert np.maximum.accumulate is not np.maximum.accumulate
    registered(np.maximum.accumulate, running_max_vjp)
    assert registry.lookup(np.maximum.accumulate).vjp_tuple is not None
    assert registry.lookup(np.minimum.accumulate) is None
    assert registry.lookup(np.maximum.reduce) is None


def test_a_rule_on_ufunc_accumulate_is_used(registered):
    registered(np.maximum.accumulate, running_max_vjp)
    assert_fd_close(pullback.grad(running_max_loss)(X), fd_estimate(running_max_loss, [X]))


def test_rules_on_ufunc_reduce_and_outer_are_used(registered):
    registered(np.add.reduce, lambda g, ans, a, axis=0: (np.expand_dims(g, axis) + 0 * a, None))
    registered(np.multiply.outer, lambda g, ans, a, b: (g @ b, a @ g))

    def f(x, y):
        return np.sum(np.add.reduce(np.multiply.outer(x, y) ** 2, 1) * x)
    x, y = np.array([0.3, 1.0, -0.5]), np.array([2.0, -1.0])
    dx, dy = pullback.grad(f, argnums=(0, 1))(x, y)
    assert_fd_close(dx, fd_estimate(f, [x, y], 0))
    assert_fd_close(dy, fd_estimate(f, [x, y], 1))


def test_without_the_rule_the_method_is_named(registered):
    with pytest.raises(pullback.MissingRuleError, match=r"numpy\.maximum\.accumulate"):
        pullback.grad(running_max_loss)(X)
    registered(np.maximum.accumulate, running_max_vjp)
    pullback.grad(running_max_loss)(X)
    registry.unregister(np.maximum.accumulate)
    with pytest.raises(pullback.MissingRuleError, match=r"numpy\.maximum\.accumulate"):
        pullback.grad(running_max_loss)(X)


def test_a_ufunc_method_is_refused_under_numba_with_what_to_do(registered):
    registered(np.maximum.accumulate, numba.njit(running_max_vjp))
    with pytest.raises(pullback.NumbaCompileError) as err:
        pullback.grad(running_max_loss, jit=True)(X)
    msg = str(err.value)
    assert "numpy.maximum.accumulate, a method of a ufunc" in msg
    assert "np.maximum.accumulate(x)" in msg and "numba.njit" in msg and "jit=False" in msg


@numba.njit
def running_max(x):
    out = x.copy()
    for i in range(1, x.shape[0]):
        out[i] = max(out[i - 1], x[i])
    return out


def test_the_advice_for_numba_works(registered, jit):
    """A function of one's own (here compiled with numba.njit) with the rule on it."""
    registered(running_max, numba.njit(running_max_vjp))

    def loss(x):
        return np.sum(running_max(x) ** 2 * np.arange(1.0, x.shape[0] + 1.0))
    assert_fd_close(pullback.grad(loss, jit=jit)(X), fd_estimate(running_max_loss, [X]))


def add_at(a, i, b):
    a = a.copy()
    np.add.at(a, i, b)
    return a


def scatter_loss(x):
    return np.sum(add_at(np.zeros(3), np.array([0, 0, 2, 1]), x) ** 2)


def test_ufunc_at_cannot_have_a_rule():
    with pytest.raises(ValueError, match="writes into its first argument in place"):
        pullback.rule(np.add.at)(lambda g, ans, a, i, b: (g, None, g[i]))
    assert registry.lookup(np.add.at) is None


@pytest.mark.parametrize("body", [
    "np.add.at(a, np.array([0, 0, 1]), x)",
    "np.copyto(a, x)",
    "np.put(a, [0, 1, 2], x)",
    "np.add(a, x, out=a)",
    "b = np.multiply(x, 2.0, out=a)",
])
def test_calls_writing_in_place_are_refused(body, tmp_path):
    path = tmp_path / "in_place.py"
    path.write_text("import numpy as np\n\ndef f(x):\n    a = np.zeros(3)\n"
                    f"    {body}\n    return np.sum(a ** 2)\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    with pytest.raises(pullback.UnsupportedSyntaxError, match="in place") as err:
        pullback.grad(namespace["f"])(np.array([0.3, 1.0, 0.5]))
    assert err.value.lineno == 5 and body in str(err.value)


def test_a_rule_on_a_function_wrapping_ufunc_at_is_used(registered):
    x = np.array([0.3, -1.0, 0.5, 2.0])
    with pytest.raises(pullback.UnsupportedSyntaxError, match=r"np\.add\.at"):
        pullback.grad(scatter_loss)(x)
    registered(add_at, lambda g, ans, a, i, b: (g, None, g[i]))
    assert_fd_close(pullback.grad(scatter_loss)(x), fd_estimate(scatter_loss, [x]))
