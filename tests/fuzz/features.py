"""The constructs of the random-program grammar, and which of them the CI
profile leaves out.

Every construct the fuzzer covers is a *feature* that can be switched on or
off.  A construct whose known bug is not fixed yet is listed in
``KNOWN_BROKEN`` (both backends), ``KNOWN_BROKEN_PYTHON`` or
``KNOWN_BROKEN_NUMBA`` with its cause, and left out of the default (CI) profile
of that backend, so that the rest of the grammar keeps running.  Deleting an
entry once its cause is fixed turns the construct back on; ``--fuzz-all`` turns
everything on.  ``UNSUPPORTED_NUMBA`` lists what the Numba backend refuses by
design (documented), also left out of its profile: those programs could only be
refused.
"""
from __future__ import annotations

FEATURES: dict[str, str] = {
    "neg_pow_base": "a negative literal as the base of **: (-1.5) ** 2",
    "pow": "powers of expressions: e ** 2, (0.5 + v * v) ** 0.5",
    "math_calls": "math.sin/cos/tanh/exp of an expression",
    "numpy_calls": "np.sin/cos/tanh/exp of scalars, and elementwise on arrays",
    "masked_singular": "np.sqrt(np.maximum(e, 0.0)) and np.where(e > 0.0, np.sqrt(np.maximum(e, "
                       "0.0)), 0.0) of an array expression: a zero cotangent through sqrt's "
                       "infinite derivative at 0 (the branch not taken)",
    "sqrt_log": "math.sqrt / math.log / np.sqrt of positive expressions",
    "division": "e / (1.5 + v * v)",
    "reductions": "np.sum, np.mean of array expressions",
    "dot": "np.dot of two array expressions",
    "kinks": "abs, min, max of expressions, np.max of an array",
    "nondiff_calls": "np.sign, np.floor and comparisons of active values",
    "ternary": "conditional expressions on data",
    "if_stmt": "if/else on data or on indices",
    "bool_ops": "and / or / not in conditions",
    "for_range": "for over range(...) with a positive step",
    "negative_step": "range(...) with a negative step",
    "checkpointed": "a for loop outside any loop marked pullback.checkpointed(range(...), every) "
                    "with every None, 1, 2 or 3: run in segments in the reverse sweep",
    "reversed_range": "for over reversed(range(...))",
    "for_array": "for over an array, and over enumerate(array)",
    "nested_loops": "a loop inside a loop",
    "nested_reuse": "an inner for loop reusing the enclosing loop's variable",
    "dependent_range": "a for loop whose range starts or stops at an enclosing index: "
                       "range(i + 1, n), range(i, n), range(i), range(j, i), range(i - 1, -1, -1)",
    "pair_sum": "a nest of loops over index pairs, for i ...: for j in range(i + 1, n): "
                "E += x[i] * x[j], with cutoffs and exits (if x[j] > c: continue, break, "
                "return) before or after the inner loop, at every depth",
    "triple_loop": "pair_sum three loops deep (triples of indices)",
    "row_sum": "for i: acc = x[i]; for j: acc += x[i] * y[j]; total += acc * acc: an inner "
               "loop's sum read after it by the outer loop's sum",
    "while_around_for": "pair_sum's outer loop as a bounded while, around the for loops",
    "outer_value": "a value computed in an outer loop's body and read in the inner loop's: "
                   "w = x[i] * x[i]",
    "loop_helper": "a module-level helper with a for loop and a return inside it, "
                   "scan(a, s, lo), called in loops and in pair sums (inlined)",
    "inner_grad": "pullback.grad(scan, 1)(a, e, lo), the derivative of the loop helper in "
                  "its running value, called in loops and in pair sums (with loop_helper): "
                  "a derivative differentiated again",
    "while_loop": "while with a bounded counter and-ed (or or-ed) with data",
    "break": "if ...: break inside a for loop",
    "while_exit": "if ...: break, or return, directly inside a while loop",
    "continue": "if ...: continue inside a for loop",
    "return_in_loop": "if ...: return inside a for loop",
    "early_return": "if ...: return outside any loop",
    "augassign": "+=, -=, *= on floats and on elements",
    "array_augassign": "+=, -=, *= on a whole local array",
    "local_array": "local 1-D arrays: np.zeros(n), copies, products",
    "block_array": "a local array made inside a loop or a branch (with local_array)",
    "element_write": "h[i] = e into a local array",
    "index_array_write": "h[np.array([2, -1, 2])] = e, += e or *= e: a write through an index "
                         "array that may name an entry more than once (the last write stays), "
                         "its value a number or a gather a[np.array([...])] * e",
    "slice_write": "h[a:b] = p[c:d] * e into a local array",
    "slice_broadcast": "h[a:b] = e: a scalar broadcast into a slice of a local array",
    "offset_slices": "h[1:-1] = h[1:-1] + e * (h[2:] - h[:-2]): slices of one array, bounds "
                     "from either end, some of width 1 (broadcast)",
    "local_matrix": "np.zeros((m, n)) written by element and by h[i, :]",
    "row_write": "a row of a 2-D local array written or read as h[i]",
    "matvec": "h @ v and v @ h with a 2-D local array (with local_matrix)",
    "slice_view": "r = h[a:], read after later writes to h",
    "helper_tuple": "a module-level helper returning a tuple, unpacked",
    "rule_tuple": "the tuple helper (with helper_tuple) given a rule, pullback.rule(helper), "
                  "whose VJP is the helper's central differences: its result taken for a "
                  "tuple, its cotangent a tuple",
    "tuple_index": "t = a, b, c; then t[j]",
    "param_reassign": "a float parameter reassigned: x = np.sum(A)",
    "array_param_reassign": "an array parameter rebound: p = p * 2.0",
    "arg_write": "an element write into an array parameter",
    "int_param": "an int parameter used in ranges, indices and products",
    "shared_code": "two programs may have the same code for f (identical text in two "
                   "modules); when off, each f gets a docstring naming its program",
    "dead_param": "a parameter the result may not depend on (when off, every return "
                  "also adds each parameter)",
    "global_values": "module-level globals read by f and by its module-level helpers (a number, "
                     "an array of a fixed length); between calls of the "
                     "gradient functions the oracle rebinds the numbers and changes the array "
                     "in place, then rebinds them all (Program.states)",
    "closure_values": "f made inside make() and reading its closure cells (a number, an array), "
                      "changed between calls as the globals are (nonlocal rebinding, writes in "
                      "place)",
    "outside_tuple": "a global or closure value that is a pair of numbers, read by item (with "
                     "global_values or closure_values)",
    "outside_copy": "a local copy of a global or closure array, h = W.copy() (with global_values "
                    "or closure_values, and local_array)",
    "folds": "pullback.scan (forward and reverse=True), foldl and foldr with tuple carries, and "
             "accumulate of a number; the step a def nested in f (unpacking its carry, reading "
             "f's values), a module-level def, or a lambda (indexing its carry)",
    "nested_carry": "fold carries nested, (u, (w, z)) and ((u, w), z), and with an array leaf "
                    "(with folds)",
    "scan_tuple_output": "a scan whose step outputs a pair: ys is 2-D (with folds)",
    "accumulate_tuple": "accumulate of a pair: its running values are 2-D",
    "custom_vjp": "module-level @pullback.custom_vjp functions with plain-Python fwd and bwd (of a "
                  "number, of two, a norm of an array, elementwise on an array), called in "
                  "expressions and loops, assigned back to their argument (s = f(s), p = f(p)) "
                  "and summed (s += norm(a) ** 1.5)",
    "custom_jvp": "the same functions as @pullback.custom_jvp with a plain-Python jvp rule",
    "has_aux": "f returns (loss, aux), differentiated with has_aux=True: the aux a number, an "
               "array or a dict of numbers",
    "aux_other": "an aux that is a string, a dict holding one, or a tuple holding an array",
    "aux_written_array": "an aux that is a local array, by name (maybe written in place before "
                         "the return)",
    "linalg_tuple": "np.linalg.slogdet and eigh of a symmetric matrix with well separated "
                    "eigenvalues made from the arguments, their results unpacked or indexed "
                    "(eigenvectors read squared)",
    "diag_build": "that matrix's diagonal made by np.diag(d) instead of np.eye(n) * d (with "
                  "linalg_tuple)",
    "named_fields": "the slogdet and eigh results read by field: r.logabsdet, r.sign, "
                    "e.eigenvalues, e.eigenvectors (with linalg_tuple)",
}

# Constructs left out of the default (CI) profile because a known cause still
# makes them fail, on both backends.  Delete an entry when its cause is fixed
# (tests/fuzz/test_regressions.py has each cause's smallest program).
KNOWN_BROKEN: dict[str, str] = {
    "outside_copy": "new: a copy of a global array (h = W.copy()) has a kind the transform does "
                    "not know: a fold over it gives results taken for possible views (u += x "
                    "refused), and a scan over it is refused under Numba ('the reverse sweep "
                    "needs it saved before it is first assigned')",
}

# The same, for causes seen on one backend only.
KNOWN_BROKEN_PYTHON: dict[str, str] = {}
KNOWN_BROKEN_NUMBA: dict[str, str] = {
    "scan_tuple_output": "new: a scan whose step outputs a pair is refused under Numba "
                         "(no unbroadcast for its typing)",
    "diag_build": "new: eigh of a matrix made with np.diag(d): the result's kind is not known "
                  "before it runs, refused under Numba",
    "accumulate_tuple": "new: accumulate of a pair is refused under Numba",
}

# Constructs a backend refuses by design (documented), left out of its CI profile:
# their programs could only be refused.
UNSUPPORTED_NUMBA: dict[str, str] = {
    "custom_jvp": "a custom_jvp function is refused under jit=True (docs/rules.md: its jvp rule "
                  "runs as plain Python)",
}

BACKENDS = ("python", "numba")


def known_broken(backend: str) -> dict[str, str]:
    """The constructs switched off in the CI profile of ``backend``, with their causes
    (and those the backend refuses by design)."""
    if backend == "numba":
        return {**KNOWN_BROKEN, **KNOWN_BROKEN_NUMBA, **UNSUPPORTED_NUMBA}
    return {**KNOWN_BROKEN, **KNOWN_BROKEN_PYTHON}


def ci_features(backend: str) -> frozenset[str]:
    """The default profile: every construct but those with a known open cause."""
    return frozenset(FEATURES) - set(known_broken(backend))


def parse_features(text: str) -> frozenset[str]:
    """``"a,b,-c"``: a comma list; ``all`` means every feature, ``-name`` removes one."""
    on: set[str] = set()
    for word in filter(None, (w.strip() for w in text.split(","))):
        if word == "all":
            on |= set(FEATURES)
            continue
        name = word.lstrip("-")
        if name not in FEATURES:
            raise ValueError(f"unknown fuzz feature {name!r}; known: {', '.join(FEATURES)}")
        (on.discard if word.startswith("-") else on.add)(name)
    return frozenset(on)


