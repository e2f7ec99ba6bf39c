"""Gradients of many independent problems on a Dask cluster.

Parameter sweeps, ensemble fits and per-subject models are many gradients of one
function at different arguments.  :func:`map_grad` sends them to the workers of
a ``dask.distributed.Client``; each worker builds the derivative once (the first
task of a kind transforms it; later tasks reuse it) and returns the gradients.

``grad(f)`` objects pickle too (as ``f`` and their options, not the generated
code), so they can be sent to workers by any other means: ``f`` must itself be
picklable, i.e. a module-level function the workers can import.
"""
from __future__ import annotations

from .api import GradientFunction

# On a worker: (f, argnums, jit, with_value) -> its gradient function, built once.
_ON_THIS_WORKER: dict = {}


def _gradient_at(f, argnums, jit, with_value, args):
    key = (f, argnums, jit, with_value)
    g = _ON_THIS_WORKER.get(key)
    if g is None:
        g = _ON_THIS_WORKER[key] = GradientFunction(f, argnums, jit, with_value)
    return g(*args)


def map_grad(client, f, params_list, argnums=0, jit=None, with_value=False):
    """The gradients of ``f`` at each argument tuple of ``params_list``, computed on
    the workers of the Dask ``client`` (a ``dask.distributed.Client``).

    Returns a list in the order of ``params_list``, each what
    ``grad(f, argnums, jit)(*params)`` returns (``(value, gradient)`` with
    ``with_value=True``).  An error on a worker is raised here, as Dask raises it.

    >>> from dask.distributed import Client, LocalCluster          # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2, processes=True))  # doctest: +SKIP
    >>> grads = map_grad(client, loss, [(theta, data) for theta in thetas])  # doctest: +SKIP
    """
    params_list = [tuple(p) if isinstance(p, (tuple, list)) else (p,) for p in params_list]
    n = len(params_list)
    futures = client.map(_gradient_at, [f] * n, [argnums] * n, [jit] * n, [with_value] * n,
                         params_list, pure=False)
    return client.gather(futures)
