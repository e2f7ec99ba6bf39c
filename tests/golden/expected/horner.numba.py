def horner_grad(x, p, _seed=1.0, _ws=()):
    """Value and reverse-mode gradient of horner with respect to x, p.

    The loop on line 16 saves per iteration: ex.
    """
    # ---- forward sweep
    _tape_ex_1 = _ws[0]
    _k_ex_1 = 0
    # from: N = len(p)
    N = len(p)
    # from: ex = p[N - 1]
    _t1 = N - 1
    ex = p[_t1]
    # from: for i in range(N - 2, -1, -1):
    _start1 = N - 2
    _n1 = trip_count(_start1, -1, -1)
    _tape_ex_1 = reserve(_tape_ex_1, _k_ex_1 + _n1)
    for i in range(_start1, -1, -1):
        # from: ex = x * ex + p[i]
        _t3 = x * ex
        _t4 = p[i]
        _tape_ex_1[_k_ex_1] = ex
        _k_ex_1 += 1
        ex = _t3 + _t4
    _value = ex
    # ---- reverse sweep
    dp = np.zeros_like(p)
    dx = 0.0
    dex = _seed
    # from: for i in range(N - 2, -1, -1):
    for i in range(_start1 - (_n1 - 1), _start1 + 1, 1):
        # from: ex = x * ex + p[i]
        _k_ex_1 -= 1
        ex = _tape_ex_1[_k_ex_1]
        dp[i] += dex
        dx = dx + dex * ex
        dex = dex * x
    # from: ex = p[N - 1]
    dp[_t1] += dex
    return _value, (dx, dp), (_tape_ex_1,)
