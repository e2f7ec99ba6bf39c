"""The ``pullback`` command: help, show and demo."""
from __future__ import annotations

import subprocess
import sys

import numpy as np

from pullback.__main__ import main


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
