"""Random-program tests: functions drawn from a grammar of numeric Python,
checked against finite differences on both backends.

Files:

* features.py   the constructs of the grammar, and those the CI profile leaves
                out because a known cause still breaks them (KNOWN_BROKEN*);
* grammar.py    the Hypothesis strategy that writes the programs;
* oracle.py     runs a program through value_and_grad, grad and vjp and
                classifies the outcome against the plain call and Richardson
                finite differences: correct, refused, mutated, wrong or crash;
                the gradient functions are called again on a second argument
                set whose arrays have another length;
* test_fuzz.py  the random-program test, one per backend;
* test_regressions.py  the smallest program of each cause found, strict xfail
                while it fails;
* test_harness.py  checks of the grammar and of the oracle themselves.

The CI run is ``pytest tests/fuzz``: 100 programs on the Python backend and 5
on Numba (each compiled twice: the optimised and the reference derivative),
from a fixed seed, known-broken constructs off.  Every program is checked
against finite differences and against the reference derivative (every
optimisation off, to 1e-12).  A long run, with every construct on, counting
every outcome instead of stopping at the first failure, and writing each
failing or refused program to a file::

    pytest tests/fuzz/test_fuzz.py --fuzz-count 2000 --fuzz-count-numba 300 \
        --fuzz-all --fuzz-keep-going --fuzz-save /tmp/fuzz-failures

Other options: ``--fuzz-features all,-dead_param`` (or a list of constructs),
``--fuzz-seed N`` (other programs).  Without ``--fuzz-keep-going`` the run
stops at the first failure of each kind and Hypothesis shrinks it.
"""
