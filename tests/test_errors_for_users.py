"""The errors a user reads: their own file and line and the fix, not pullback's frames."""
from __future__ import annotations

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
