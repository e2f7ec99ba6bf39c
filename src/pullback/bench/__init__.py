"""``pullback bench``: gradient ÷ primal for the seed workloads, pullback against its peers.

Modules, one job each: ``workloads`` (the plain functions and their inputs),
``peers`` (the same in JAX, PyTorch and autograd), ``tools`` (turning a
workload into a timed gradient per tool), ``timing`` (interleaved medians),
``runner`` (the loop, the gradient check), ``progress``, ``threads`` (NumPy's
BLAS on one thread), ``report`` (table, JSON, CSV), ``plots`` (PNGs), ``cli``
(the command's arguments and main).
"""
