def prod_of_columns_grad(A, _seed=1.0):
    """Value and reverse-mode gradient of prod_of_columns with respect to A."""
    # ---- forward sweep
    # from: return np.sum(np.prod(A, axis=0))
    _t1 = prod_numba(A, axis=0)
    _t2 = np.sum(_t1)
    _value = _t2
    # ---- reverse sweep
    d_t2 = _seed
    # from: return np.sum(np.prod(A, axis=0))
    d_t1 = sum_vjp(d_t2, _t1, None, False, True)
    dA = prod_vjp(d_t1, _t1, A, 0, False, initial=None, where=True)
    return _value, (dA,)
