"""benchmarks/adjoints.py's correctness check, on small inputs: for every kernel,
pullback's gradient (Python backend) agrees with the hand-written adjoint to 1e-10
and with finite differences along random directions, and so do the other spellings
of the kernels.  The hand-written Numba adjoints run as Python (``.py_func``): their
compilation would take most of this file's time; the benchmark itself runs them
compiled, and checks pullback's Numba backend and JAX, on every invocation."""
import importlib.util
import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "adjoints.py")


def _load():
    spec = importlib.util.spec_from_file_location("pullback_benchmark_adjoints", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module              # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


adjoints = _load()


@pytest.mark.parametrize("name", list(adjoints.KERNELS))
def test_pullback_python_agrees_with_hand_written_adjoint(name):
    kernel = adjoints.KERNELS[name]
    errors = adjoints.check_kernel(kernel, "small", backends=("python",),
                                   hand=kernel.hand.py_func)
    assert errors["pullback python"] <= 1e-10
    assert errors["finite differences"] <= 1e-5


def test_other_spellings_agree_with_the_same_adjoints():
    adjoints.check_spellings(backends=("python",), hand_py=True)


def test_the_check_catches_a_wrong_gradient():
    kernel = adjoints.KERNELS["garch"]

    def wrong(w, a, b, r):
        value, gw, ga, gb = kernel.hand.py_func(w, a, b, r)
        return value, gw, ga * (1 + 1e-7), gb
    with pytest.raises(adjoints.CheckFailed, match="disagrees"):
        adjoints.check_kernel(kernel, "small", backends=("python",), hand=wrong)


def test_the_suite_has_nine_kernels_with_jax_versions():
    assert len(adjoints.KERNELS) >= 9
    assert all(callable(k.jax) for k in adjoints.KERNELS.values())
