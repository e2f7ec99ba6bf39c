"""pullback export: the derivative as a standalone module, imported in a process where
``import pullback`` fails, gives pullback.grad's values (to the bit: it is the same
generated code), on both backends."""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pullback
from pullback.examples import lotka_volterra_misfit
from pullback.export import ExportError, export_source, parse_kinds

SCALE = 3.0


def recurrence(x, p, n):
    s = 0.0
    for i in range(n):
        s = s * x + np.sin(p[i]) * SCALE
    return s


def layer(W, b, x):
    return np.sum(np.tanh(W @ x + b) ** 2)


def products(x, A):
    return np.prod(x) + np.sum(np.max(A, axis=0) ** 2)


def heat(u, k, steps):
    u = u.copy()
    for _ in range(steps):
        lap = np.zeros_like(u)
        for i in range(1, u.shape[0] - 1):
            lap[i] = u[i - 1] - 2.0 * u[i] + u[i + 1]
        u += k * lap
    return np.sum(u ** 2)


RNG = np.random.default_rng(7)
CASES = {
    "recurrence": (recurrence, (0.7, RNG.normal(size=5), 5), (0, 1)),
    "lotka_volterra": (lotka_volterra_misfit, (np.array([1.0, 0.5, 0.2, 0.5]),
                                               RNG.random((6, 2)), 0.1), 0),
    "layer": (layer, (RNG.normal(size=(3, 4)), RNG.normal(size=3), RNG.normal(size=4)), (0, 1)),
    "products": (products, (np.array([0.5, 0.0, 2.0]), RNG.normal(size=(3, 2))), (0, 1)),
    "heat": (heat, (RNG.random(6), 0.1, 3), (0, 1)),
}


def _without_pullback(path, name, args):
    """Import ``name`` from ``path`` in a fresh process where pullback cannot be
    imported, and return its grad at ``args`` (as JSON lists)."""
    code = textwrap.dedent(f"""
        import json, sys
        sys.modules["pullback"] = None          # import pullback raises ImportError
        sys.path.insert(0, {str(path)!r})
        import numpy as np
        import {name} as m
        args = [np.array(a) if isinstance(a, list) else a for a in json.loads(sys.argv[1])]
        g = m.grad(*args)
        g = g if isinstance(g, tuple) else (g,)
        print(json.dumps([np.asarray(x).tolist() for x in g]))
    """)
    payload = json.dumps([a.tolist() if isinstance(a, np.ndarray) else a for a in args])
    run = subprocess.run([sys.executable, "-c", code, payload], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


# Array code compiles through twins that pullback registers with Numba (overloads),
# which an exported module cannot: --jit refuses those, by name.
COMPILED = ("recurrence", "lotka_volterra")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("jit", [False, True], ids=["python", "numba"])
def test_exported_module_gives_pullbacks_gradient_without_pullback(case, jit, tmp_path):
    f, args, argnums = CASES[case]
    if jit and case not in COMPILED:
        with pytest.raises(ExportError, match="without --jit"):
            export_source(f, args, argnums, jit)
        return
    (tmp_path / f"exported_{case}.py").write_text(export_source(f, args, argnums, jit))
    got = _without_pullback(tmp_path, f"exported_{case}", args)
    ref = pullback.grad(f, argnums=argnums, jit=jit)(*args)
    ref = ref if isinstance(ref, tuple) else (ref,)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-13, atol=0)


def test_the_header_names_function_kinds_version_and_frozen_globals():
    src = export_source(recurrence, (0.7, np.ones(3), 3), (0, 1), False)
    head = src.split('"""')[1]
    assert "recurrence" in head and "x: float, p: float64[:], n: int" in head
    assert "pullback" in head and "SCALE" in head
    assert "import pullback" not in src and "from pullback" not in src


def test_command_line(tmp_path):
    module = tmp_path / "usermodel.py"
    module.write_text(textwrap.dedent("""
        import numpy as np

        def loss(w, x):
            s = 0.0
            for i in range(x.shape[0]):
                s += (w[0] * x[i] + w[1]) ** 2
            return s
    """))
    out = tmp_path / "loss_grad.py"
    run = subprocess.run([sys.executable, "-m", "pullback", "export", "usermodel:loss",
                          "--kinds", "float64[:],float64[:]", "--jit", "-o", str(out)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    w, x = np.array([0.5, -1.0]), np.array([1.0, 2.0, 3.0])
    got = _without_pullback(tmp_path, "loss_grad", (w, x))
    expected = [sum(2 * (w[0] * v + w[1]) * v for v in x), sum(2 * (w[0] * v + w[1]) for v in x)]
    np.testing.assert_allclose(got[0], expected, rtol=1e-13)


def test_kinds_are_parsed_and_refused_clearly():
    x, a, b = parse_kinds("float, float32[:, :], int")
    assert x == 0.5 and a.dtype == np.float32 and a.ndim == 2 and b == 3
    with pytest.raises(ValueError, match="unknown argument kind"):
        parse_kinds("matrix")


def _closure(k):
    def helper(x):
        return x * k
    return helper


HELPER = _closure(2.0)


def calls_a_closure(x):
    return HELPER(x) ** 2


def test_what_cannot_be_source_is_refused_by_name():
    pullback.rule(HELPER)(lambda g, ans, x: g * 2.0)
    try:
        with pytest.raises(ExportError, match="HELPER"):
            export_source(calls_a_closure, (0.5,), 0, False)
    finally:
        pullback.unregister(HELPER)
