"""The errors a user reads: their own file and line and the fix, not pullback's frames."""
from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import numpy as np
import pytest

import pullback


def uses_with(x):
    with open(__file__):
        pass
    return x


def uses_fft(x):
    return np.fft.fft(x).real.sum()


#: pullback's own files: a frame is the library's when its file is in here (not when
#: its path merely contains "/pullback/", as every file of a clone named pullback does).
LIBRARY = Path(pullback.__file__).resolve().parent


def _frames(exc):
    return [f.filename for f in traceback.extract_tb(exc.__traceback__)]


def _library_frames(exc):
    """The frames of ``exc``'s traceback in pullback's own files."""
    return [fn for fn in _frames(exc) if Path(fn).resolve().is_relative_to(LIBRARY)]


@pytest.mark.parametrize("f,args,error", [
    (uses_with, (1.0,), pullback.UnsupportedSyntaxError),
    (uses_fft, (np.ones(3),), pullback.MissingRuleError),
])
def test_errors_carry_no_internal_frames(f, args, error, monkeypatch):
    monkeypatch.delenv("PULLBACK_DEBUG", raising=False)
    with pytest.raises(error) as info:
        pullback.grad(f)(*args)
    internal = [fn for fn in _library_frames(info.value) if Path(fn).name != "api.py"]
    assert not internal, internal
    assert __file__ in str(info.value)            # the user's file and line are in the message
    assert info.value.__suppress_context__


def test_pullback_debug_keeps_the_internal_frames(monkeypatch):
    monkeypatch.setenv("PULLBACK_DEBUG", "1")
    with pytest.raises(pullback.MissingRuleError) as info:
        pullback.grad(uses_fft)(np.ones(3))
    assert any(Path(fn).resolve().is_relative_to(LIBRARY / "reverse") for fn in _frames(info.value))


def test_vjp_and_source_errors_are_user_facing_too(monkeypatch):
    monkeypatch.delenv("PULLBACK_DEBUG", raising=False)
    with pytest.raises(pullback.MissingRuleError) as info:
        pullback.vjp(uses_fft, np.ones(3))
    assert not [fn for fn in _library_frames(info.value) if Path(fn).name == "pipeline.py"]
    with pytest.raises(pullback.UnsupportedSyntaxError):
        pullback.grad(uses_with).source


def test_error_classes_are_named_as_exported():
    assert pullback.MissingRuleError.__module__ == "pullback"
    assert "pullback.UnsupportedSyntaxError" in traceback.format_exception_only(
        pullback.UnsupportedSyntaxError("x", None))[-1]


def test_a_script_shows_the_user_line_and_the_fix(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent("""
        import numpy as np, pullback
        def loss(x):
            return np.fft.fft(x).real.sum()
        pullback.grad(loss)(np.ones(3))
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"}).stderr
    assert "user_script.py" in out and "np.fft.fft(x)" in out and "pullback.rule" in out
    assert str(LIBRARY / "reverse") not in out and str(LIBRARY / "pipeline.py") not in out


def _firsthalf(p):
    return p[:2]


def writes_into_a_helpers_view(p):
    v = _firsthalf(p)
    v[0] = 2.0 * v[1]
    return np.sum(v)


def test_an_alias_error_names_the_users_variables_not_temporaries():
    # The helper's result is an internal temporary once inlined; the message once
    # read "v = _t1 makes no copy".
    with pytest.raises(pullback.UnsupportedSyntaxError) as info:
        pullback.grad(writes_into_a_helpers_view)(np.array([0.3, 0.5, 0.7]))
    message = str(info.value)
    assert "v = _firsthalf(p).copy()" in message
    words = message.replace("_firsthalf", "").split()
    assert not [w for w in words if w.strip("`'(),:").startswith("_t")], message


def test_an_error_inside_a_function_inlined_from_another_file_names_the_users_line():
    """Statements inlined from another file carry the line of the user's call (line
    numbers index the top function's file), so a later refusal points at that call."""
    import elsewhere

    def f(x):
        return elsewhere.spread(x) * 2.0
    with pytest.raises(pullback.MissingRuleError) as info:
        pullback.grad(f)(1.5)
    msg = str(info.value)
    assert "ndarray.view" in msg and __file__ in msg
    assert "return elsewhere.spread(x) * 2.0" in msg


# ---------------------------------------------------------------- the API's refusals

def _square(x):
    return x * x


def _total(x):
    return np.sum(x * x)


def _pair(x):
    return np.sum(x), x


def kron_square(x):
    return np.kron(x, x)        # its rank is not known before it runs: np.kron's VJP
                                # fails on grad's seed 1.0, and the result is refused


def _vjp_back_with_one_cotangent_for_a_pair():
    _, back = pullback.vjp(lambda x: (x * 2.0, x * 3.0), 1.5)
    back(1.0)


X3 = np.array([0.5, -1.0, 2.0])

REFUSALS = [
    ("grad of no function", lambda: pullback.grad(3), TypeError, "grad expects a function"),
    ("argnums out of range", lambda: pullback.grad(_total, argnums=5)(X3), ValueError,
     "argnums=5 is out of range"),
    ("argnums twice", lambda: pullback.value_and_grad(_total, argnums=(0, 0))(X3), ValueError,
     "names an argument twice"),
    ("argnums of no int", lambda: pullback.grad(_total, argnums="x")(X3), TypeError,
     "argnums must be an int"),
    ("too many arguments", lambda: pullback.grad(_total)(X3, X3), TypeError,
     "takes 1 positional argument"),
    ("an int to differentiate", lambda: pullback.grad(_square)(3), TypeError,
     "cannot differentiate _square with respect to argument 0"),
    ("a complex argument", lambda: pullback.grad(_square)(1j), TypeError, "complex"),
    ("an array result, by its kind", lambda: pullback.grad(_square)(X3), TypeError,
     "returns a 1-D array; use vjp"),
    ("an array result, when it ran", lambda: pullback.grad(kron_square)(X3), TypeError,
     "kron_square to return a scalar, but it returned shape (9,); use vjp"),
    ("has_aux without a pair", lambda: pullback.grad(_total, has_aux=True)(X3), TypeError,
     "has_aux=True) requires _total to return a pair"),
    ("a tuple result", lambda: pullback.grad(_pair)(X3), TypeError, "has_aux=True"),
    ("the source's argnums", lambda: pullback.grad(_total, argnums=3).source, ValueError,
     "out of range"),
    ("vjp's cotangent of a pair", _vjp_back_with_one_cotangent_for_a_pair, TypeError,
     "back() takes a tuple of 2 cotangents"),
    ("jvp's tangent shape", lambda: pullback.jvp(_total, (X3,), (np.ones(2),)), ValueError,
     "has shape (2,), its primal (3,)"),
    ("jvp without tuples", lambda: pullback.jvp(_total, X3, X3), TypeError, "two tuples"),
    ("hvp's count", lambda: pullback.hvp(_total, (X3,), (X3, X3)), ValueError,
     "1 primals but 2 tangents"),
    ("hessian's argnums", lambda: pullback.hessian(_total, argnums=2)(X3), ValueError,
     "out of range"),
    ("jacfwd's argnums", lambda: pullback.jacfwd(_square, argnums=2)(X3), ValueError,
     "out of range"),
    ("jacrev's argnums", lambda: pullback.jacrev(_square, argnums=2)(X3), ValueError,
     "out of range"),
    ("custom_vjp of no function", lambda: pullback.custom_vjp(3), TypeError,
     "decorates a function"),
    ("a library rule unregistered", lambda: pullback.unregister(np.sin), ValueError,
     "is pullback's own"),
    ("vmap's batch sizes", lambda: pullback.vmap(_total)(np.ones((3, 2)), np.ones((2, 2))),
     ValueError, "different sizes"),
    ("vmap of no function", lambda: pullback.vmap(3), TypeError, "expects a function"),
    ("a sparse Jacobian of a 2-D argument",
     lambda: pullback.jacfwd(_square, sparse=True)(np.ones((2, 2))), ValueError, "1-D array"),
]


@pytest.mark.parametrize("call, error, words", [r[1:] for r in REFUSALS],
                         ids=[r[0] for r in REFUSALS])
def test_the_apis_refusals_show_at_most_one_library_frame(call, error, words, monkeypatch):
    """A TypeError or ValueError with which the API refuses bad input says what is wrong
    in its message: pullback's frames below the call (the checks that raised it) are
    noise, as they are for pullback's own errors."""
    monkeypatch.delenv("PULLBACK_DEBUG", raising=False)
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)
    assert len(_library_frames(info.value)) <= 1, _library_frames(info.value)
    assert _frames(info.value)[0] == __file__       # the user's call is still shown


def test_pullback_debug_keeps_the_frames_of_a_refusal(monkeypatch):
    monkeypatch.setenv("PULLBACK_DEBUG", "1")
    with pytest.raises(ValueError) as info:
        pullback.grad(_total, argnums=5)(X3)
    assert any(Path(fn).name == "arguments.py" for fn in _library_frames(info.value))


def test_an_error_of_the_users_own_code_keeps_its_frames(monkeypatch):
    monkeypatch.delenv("PULLBACK_DEBUG", raising=False)

    def refuses(x):
        raise ValueError("the user's own")
    with pytest.raises(ValueError, match="the user's own") as info:
        pullback.vjp(refuses, 1.5)
    assert _frames(info.value)[-1] == __file__


# ------------------------------------------------- errors raised while the derivative runs

def first_doubled(x):
    y = x * 2.0
    return y[0] * 3.0


FIRST_LINE = inspect.getsourcelines(first_doubled)[1] + 2
FIRST_NOTE = ("raised in the derivative of first_doubled, at the code generated for "
              f"`return y[0] * 3.0` (File \"{__file__}\", line {FIRST_LINE})")


def test_an_error_in_the_derivative_names_the_users_line(jit_mode, monkeypatch):
    """x[0] of an empty array fails in the generated code, in pullback's compile cache:
    the error says which line of the user's it was generated for, and shows one frame
    of pullback's, the call (compiled by Numba, with PULLBACK_BOUNDSCHECK=1 as in the
    tests, the code has no frame of its own: the same code run as Python finds the
    line)."""
    monkeypatch.delenv("PULLBACK_DEBUG", raising=False)
    for run in (lambda: pullback.grad(first_doubled, jit=jit_mode != "python")(np.array([])),
                lambda: pullback.jvp(first_doubled, (np.array([]),), (np.array([]),),
                                     jit=jit_mode != "python")):
        with pytest.raises(IndexError) as info:
            run()
        assert info.value.__notes__ == [FIRST_NOTE]
        frames = _frames(info.value)
        assert len(_library_frames(info.value)) <= 1 and frames[0] == __file__, frames
        # besides the test's and the API's frames, only the generated code's (run as
        # Python: the line that failed)
        others = set(frames) - {__file__} - set(_library_frames(info.value))
        assert all(Path(fn).parent == pullback.cache_dir() / "modules" for fn in others)


def tripled(x):
    return x * 3.0


@pullback.rule(tripled)
def tripled_vjp(g, ans, x):
    raise ValueError("the rule's own error")


def calls_a_failing_rule(x):
    y = tripled(x) + 1.0
    return y * y


def test_an_error_of_the_users_rule_keeps_its_frames_and_names_the_call(monkeypatch):
    monkeypatch.delenv("PULLBACK_DEBUG", raising=False)
    line = inspect.getsourcelines(calls_a_failing_rule)[1] + 1
    _, back = pullback.vjp(calls_a_failing_rule, 1.5)
    for run in (lambda: pullback.grad(calls_a_failing_rule)(1.5), lambda: back(1.0)):
        with pytest.raises(ValueError, match="the rule's own error") as info:
            run()
        assert _frames(info.value)[-1] == __file__      # raised in tripled_vjp: shown
        assert info.value.__notes__[-1].startswith(
            "raised in the derivative of calls_a_failing_rule, at the code generated for "
            f"`y = tripled(x) + 1.0` (File \"{__file__}\", line {line})")
