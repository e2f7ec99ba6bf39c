"""Gradients of many problems on a real Dask cluster (two worker processes)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import pullback
from helpers import assert_close, assert_fd_close, fd_estimate
from pullback.ensemble import map_grad
from pullback.examples import horner, lotka_volterra_misfit


def _problems(n, steps=40):
    rng = np.random.default_rng(7)
    observed = np.abs(rng.normal(1.0, 0.3, size=(steps, 2)))
    return [(np.array([1.1, 0.4, 0.3, 0.8]) * rng.uniform(0.8, 1.2, 4), observed, 0.05)
            for _ in range(n)]


def test_gradient_functions_pickle_and_work_after():
    g = pullback.grad(horner, argnums=(0, 1))
    p = np.array([1.0, 2.0, 3.0])
    g(0.5, p)                                   # generated code exists now; it is not pickled
    h = pickle.loads(pickle.dumps(g))
    dx, dp = h(0.5, p)
    assert_close(dp, [1.0, 0.5, 0.25])
    assert_close(dx, 2.0 + 2 * 3.0 * 0.5)


def test_map_grad_on_two_worker_processes_matches_the_serial_gradients():
    distributed = pytest.importorskip("distributed")
    problems = _problems(8)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        got = map_grad(client, lotka_volterra_misfit, problems)
        with_value = map_grad(client, lotka_volterra_misfit, problems[:2], with_value=True)
    serial = [pullback.grad(lotka_volterra_misfit)(*p) for p in problems]
    for g, s in zip(got, serial):
        np.testing.assert_allclose(g, s, rtol=1e-12)
    # and the serial gradient itself is right
    assert_fd_close(serial[0], fd_estimate(lotka_volterra_misfit, problems[0], 0), rtol=1e-5)
    value, grad0 = with_value[0]
    assert value == pytest.approx(lotka_volterra_misfit(*problems[0]))
    np.testing.assert_allclose(grad0, serial[0], rtol=1e-12)
