"""The ``pullback`` command: help, show and demo."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pullback
from pullback.__main__ import main

SRC = str(Path(pullback.__file__).resolve().parents[1])      # this checkout's pullback


def run(*args):
    return subprocess.run([sys.executable, "-m", "pullback", *args], capture_output=True,
                          text=True, timeout=300)


def test_help_lists_the_commands():
    out = run("--help")
    assert out.returncode == 0
    assert "demo" in out.stdout and "show" in out.stdout
    sub = run("show", "--help")
    assert sub.returncode == 0 and "MODULE:FUNCTION" in sub.stdout and "--jit" in sub.stdout


def test_no_command_prints_help_and_fails():
    out = run()
    assert out.returncode == 2 and "COMMAND" in out.stdout


def test_show_prints_the_generated_derivative(capsys):
    assert main(["show", "pullback.examples:horner", "--argnums", "0,1"]) == 0
    src = capsys.readouterr().out
    assert src.startswith("def horner_grad(x, p")
    assert "dp[i] += dex" in src
    # The printed code is the derivative: run it.
    namespace = {"np": np}
    from pullback.core.runtime import trip_count
    namespace["trip_count"] = trip_count
    exec(src, namespace)
    value, (dx, dp) = namespace["horner_grad"](0.5, np.array([1.0, 2.0, 3.0]))
    assert value == 1.0 + 2.0 * 0.5 + 3.0 * 0.25
    np.testing.assert_allclose(dp, [1.0, 0.5, 0.25])
    assert dx == 2.0 + 2 * 3.0 * 0.5


def test_show_names_what_it_cannot_find(capsys):
    assert main(["show", "no_such_module_here:f"]) == 2
    assert "cannot find" in capsys.readouterr().err
    assert main(["show", "pullback.examples"]) == 2


def test_demo_explains_and_runs():
    out = run("demo")
    assert out.returncode == 0, out.stderr
    assert "dp[i]" in out.stdout and "x**i" in out.stdout and "gradient" in out.stdout
    assert "Python backend" in out.stdout


USER_MODULE = '''
import numpy as np

def fine(x, y):
    return np.sum(x * y)

def uses_with(x):
    with open(__file__):
        pass
    return x

NOT_A_FUNCTION = 3
'''


@pytest.mark.parametrize("argv, status, words", [
    (["show", "usermod:fine", "--argnums", "5"], 1, "argnums=5 is out of range"),
    (["show", "usermod:fine", "--argnums", "0,0"], 1, "names an argument twice"),
    (["show", "usermod:fine", "--argnums", "x"], 2, "expected integers"),
    (["show", "usermod:uses_with"], 1, "usermod.py\", line 8, in uses_with; with open"),
    (["show", "usermod:NOT_A_FUNCTION"], 1, "grad expects a function"),
    (["show", "brokenmod:f"], 1, "importing brokenmod raised RuntimeError: boom"),
    (["show", "usermod:missing"], 2, "cannot find usermod:missing"),
    (["bench", "--only", "nope"], 2, "unknown workload nope"),
    (["bench", "--only", "horner", "--out", "usermod.py/results"], 1, "cannot write the results"),
    (["nonsense"], 2, "invalid choice"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_every_error_is_one_line(argv, status, words, tmp_path):
    (tmp_path / "usermod.py").write_text(USER_MODULE)
    (tmp_path / "brokenmod.py").write_text("raise RuntimeError('boom at import')\n")
    env = {k: v for k, v in os.environ.items() if k != "PULLBACK_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join([SRC, env.get("PYTHONPATH", "")])  # from tmp_path
    out = subprocess.run([sys.executable, "-m", "pullback", *argv], capture_output=True,
                         text=True, timeout=300, cwd=tmp_path, env=env)
    assert out.returncode == status, out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pullback"), out.stderr
    assert words in lines[0]


def test_pullback_debug_keeps_the_traceback(tmp_path, monkeypatch, capsys):
    (tmp_path / "usermod.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PULLBACK_DEBUG", "1")
    with pytest.raises(ValueError, match="out of range"):
        main(["show", "usermod:fine", "--argnums", "5"])
    monkeypatch.delenv("PULLBACK_DEBUG")
    assert main(["show", "usermod:fine", "--argnums", "5"]) == 1
    assert "out of range" in capsys.readouterr().err
