def helper_call_grad(x, p, _seed=1.0):
    """Value and reverse-mode gradient of helper_call with respect to x, p.

    The loop on line 37 saves per iteration: 1 intermediate value.
    """
    # ---- forward sweep
    _fstack = []
    _fpush = _fstack.append
    _scaled_square_a_1 = 0.0
    # from: s = 0.0
    s = 0.0
    # from: for i in range(len(p)):
    _t1 = len(p)
    _n1 = trip_count(0, _t1, 1)
    for i in range(0, _t1, 1):
        # from: s += _scaled_square(p[i], x)
        _t2 = p[i]
        _fpush(_scaled_square_a_1)
        _scaled_square_a_1 = _t2
        _scaled_square_c_1 = x
        _t3 = _scaled_square_c_1 * _scaled_square_a_1
        _scaled_square_result1 = _t3 * _scaled_square_a_1
        s = s + _scaled_square_result1
    _value = s
    # ---- reverse sweep
    _fpop = list(map(float, _fstack)).pop
    dp = [0.0] * len(p)
    d_scaled_square_a_1 = 0.0
    d_scaled_square_c_1 = 0.0
    d_scaled_square_result1 = 0.0
    dx = 0.0
    ds = _seed
    # from: for i in range(len(p)):
    for i in range(_n1 - 1, -1, -1):
        # from: s += _scaled_square(p[i], x)
        d_scaled_square_result1 = d_scaled_square_result1 + ds
        d_t4 = d_scaled_square_result1
        d_scaled_square_result1 = 0.0
        _t3 = _scaled_square_c_1 * _scaled_square_a_1
        d_t3 = d_t4 * _scaled_square_a_1
        d_scaled_square_a_1 = d_scaled_square_a_1 + d_t4 * _t3
        d_scaled_square_c_1 = d_scaled_square_c_1 + d_t3 * _scaled_square_a_1
        d_scaled_square_a_1 = d_scaled_square_a_1 + d_t3 * _scaled_square_c_1
        dx = dx + d_scaled_square_c_1
        d_scaled_square_c_1 = 0.0
        d_t2 = d_scaled_square_a_1
        _scaled_square_a_1 = _fpop()
        d_scaled_square_a_1 = 0.0
        dp[i] += d_t2
    # from: s = 0.0
    dp = np.array(dp)
    return _value, (dx, dp)
