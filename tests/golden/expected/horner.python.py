def horner_grad(x, p, _seed=1.0):
    """Value and reverse-mode gradient of horner with respect to x, p.

    The loop on line 16 saves per iteration: ex.
    """
    # ---- forward sweep
    _fstack = []
    _fpush = _fstack.append
    # from: N = len(p)
    N = len(p)
    # from: ex = p[N - 1]
    _t1 = N - 1
    ex = p[_t1]
    # from: for i in range(N - 2, -1, -1):
    _start1 = N - 2
    _n1 = trip_count(_start1, -1, -1)
    for i in range(_start1, -1, -1):
        # from: ex = x * ex + p[i]
        _t3 = x * ex
        _t4 = p[i]
        _fpush(ex)
        ex = _t3 + _t4
    _value = ex
    # ---- reverse sweep
    _fpop = list(map(float, _fstack)).pop
    dp = [0.0] * len(p)
    dx = 0.0
    dex = _seed
    # from: for i in range(N - 2, -1, -1):
    for i in range(_start1 - (_n1 - 1), _start1 + 1, 1):
        # from: ex = x * ex + p[i]
        ex = _fpop()
        dp[i] += dex
        dx = dx + dex * ex
        dex = dex * x
    # from: ex = p[N - 1]
    dp[_t1] += dex
    dp = np.array(dp)
    return _value, (dx, dp)
