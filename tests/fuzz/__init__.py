"""Random-program tests: functions drawn from a grammar of numeric Python,
checked against finite differences on both backends.

Files:

* features.py   the constructs of the grammar, and those the CI profile leaves
                out because a known cause still breaks them (KNOWN_BROKEN*);
* grammar.py    the Hypothesis strategy that writes the programs;
* oracle.py     runs a program through value_and_grad, grad, vjp, jvp, vmap,
                sparsity, second order and (with PyTorch installed)
                pullback.torch.function, and classifies the outcome
                against the plain call and Richardson finite differences:
                correct, refused, mutated, wrong or crash; the gradient
                functions are called again on a second argument set whose arrays
                have another length, and, for a program that reads globals or
                closure cells, again after those change (numbers rebound, arrays
                changed in place, then rebound: ``Program.states``), each call
                judged at the values current then;
* test_fuzz.py  the random-program test, one per backend;
* test_regressions.py  the smallest program of each cause found, strict xfail
                while it fails;
* test_harness.py  checks of the grammar and of the oracle themselves.

The CI run is ``pytest tests/fuzz``: 100 programs on the Python backend and 2
on Numba (each one compile: the reference derivative is the Python backend's),
from a fixed seed, known-broken constructs off (and, on Numba, custom_jvp, which
it refuses by design).  Every program is checked against finite differences and
against the reference derivative (every optimisation off, to 1e-12); a Numba
program also against the Python backend's own derivative, and its derivative's
code run as Python (the interim path of the default background-compile mode,
``LazyNumba.python``) against both.  A long run, counting every outcome instead
of stopping at the first failure, and writing each failing or refused program to
a file (each says which judged program of the run it was)::

    pytest tests/fuzz/test_fuzz.py --fuzz-count 2000 --fuzz-count-numba 300 \
        --fuzz-keep-going --fuzz-save /tmp/fuzz-failures

(the CI profile; ``--fuzz-all`` turns the known-broken constructs on as well).
The constructs of values read from outside the arguments and of the recent API
alone, on Numba::

    pytest tests/fuzz/test_fuzz.py -k numba --fuzz-count-numba 300 --fuzz-keep-going \
        --fuzz-features global_values,closure_values,folds,nested_carry,custom_vjp,has_aux,linalg_tuple,local_array,for_range,augassign

Other options: ``--fuzz-features all,-dead_param`` (or a list of constructs),
``--fuzz-seed N`` (other programs).  Without ``--fuzz-keep-going`` the run
stops at the first failure of each kind and Hypothesis shrinks it.
"""
