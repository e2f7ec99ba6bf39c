"""Speed-up of an ensemble of gradients on a Dask cluster: 2 worker processes vs 1.

Run:  python benchmarks/ensemble.py [--fits 200]

Each fit is the gradient of an RK4 Lotka-Volterra misfit (pullback.examples).
Both clusters run in this process's machine; the ratio is measured here, with
the clusters warmed up first (each worker has transformed the function once).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from distributed import Client, LocalCluster

from pullback.ensemble import map_grad
from pullback.examples import lotka_volterra_misfit


def problems(n, steps=400):
    rng = np.random.default_rng(7)
    observed = np.abs(rng.normal(1.0, 0.3, size=(steps, 2)))
    return [(np.array([1.1, 0.4, 0.3, 0.8]) * rng.uniform(0.8, 1.2, 4), observed, 0.01)
            for _ in range(n)]


def timed(workers, params, repeat=3):
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        map_grad(client, lotka_volterra_misfit, params[:2 * workers])      # warm up
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            map_grad(client, lotka_volterra_misfit, params)
            ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fits", type=int, default=200)
    args = ap.parse_args(argv)
    params = problems(args.fits)
    one, two = timed(1, params), timed(2, params)
    print(f"{args.fits} RK4 fit gradients: 1 worker {one:.2f} s, 2 workers {two:.2f} s, "
          f"speed-up {one / two:.2f}x")


if __name__ == "__main__":
    main()
