def helper_call_grad(x, p, _seed=1.0):
    """Value and reverse-mode gradient of helper_call with respect to x, p.

    The loop on line 37 keeps no tape: each iteration's adjoint runs right after it.
    """
    # ---- forward sweep
    # from: s = 0.0
    s = 0.0
    # from: for i in range(len(p)):
    _t1 = len(p)
    _n1 = trip_count(0, _t1, 1)
    _adj_p1 = np.zeros_like(p)
    _adj_x1 = 0.0
    _unit1 = 1.0
    d_scaled_square_a_1 = 0.0
    d_scaled_square_c_1 = 0.0
    d_scaled_square_result1 = 0.0
    d_t2 = 0.0
    d_t3 = 0.0
    d_t4 = 0.0
    d_t5 = 0.0
    for i in range(0, _t1, 1):
        # from: s += _scaled_square(p[i], x)
        _scaled_square_a_1 = p[i]
        _scaled_square_c_1 = x
        _t3 = _scaled_square_c_1 * _scaled_square_a_1
        _scaled_square_result1 = _t3 * _scaled_square_a_1
        s = s + _scaled_square_result1
        # from: s += _scaled_square(p[i], x)
        d_t5 = _unit1
        _unit1 = d_t5
        d_scaled_square_result1 = d_scaled_square_result1 + d_t5
        d_t4 = d_scaled_square_result1
        d_scaled_square_result1 = 0.0
        d_t3 = d_t4 * _scaled_square_a_1
        d_scaled_square_a_1 = d_scaled_square_a_1 + d_t4 * _t3
        d_scaled_square_c_1 = d_scaled_square_c_1 + d_t3 * _scaled_square_a_1
        d_scaled_square_a_1 = d_scaled_square_a_1 + d_t3 * _scaled_square_c_1
        _adj_x1 = _adj_x1 + d_scaled_square_c_1
        d_scaled_square_c_1 = 0.0
        d_t2 = d_scaled_square_a_1
        d_scaled_square_a_1 = 0.0
        _adj_p1[i] += d_t2
    _value = s
    # ---- reverse sweep
    dp = np.zeros_like(p)
    dx = 0.0
    ds = _seed
    # from: for i in range(len(p)):
    _nonzero1 = ds != 0.0
    if _nonzero1:
        dp += ds * _adj_p1
        dx = dx + ds * _adj_x1
    # from: s = 0.0
    return _value, (dx, dp)
