def branch_with_array_write_grad(x, p, _seed=1.0):
    """Value and reverse-mode gradient of branch_with_array_write with respect to x, p.

    The loop on line 23 saves per iteration: 3 intermediate values.
    """
    # ---- forward sweep
    _stack = []
    _push = _stack.append
    _fstack = []
    _fpush = _fstack.append
    _t4 = False
    _t5 = 0.0
    _t7 = 0.0
    # from: out = np.zeros(len(p))
    _t1 = len(p)
    out = np.zeros(_t1)
    # from: for i in range(len(p)):
    _t2 = len(p)
    _n1 = trip_count(0, _t2, 1)
    for i in range(0, _t2, 1):
        # from: if p[i] > 0.0:
        _t3 = p[i]
        _push(_t4)
        _t4 = _t3 > 0.0
        if _t4:
            # from: out[i] = x * p[i]
            _fpush(_t5)
            _t5 = p[i]
            out[i] = x * _t5
        else:
            # from: out[i] = math.sin(p[i])
            _fpush(_t7)
            _t7 = p[i]
            _t8 = math.sin(_t7)
            out[i] = _t8
    # from: return np.sum(out * out)
    _t9 = out * out
    _t10 = np.sum(_t9)
    _value = _t10
    # ---- reverse sweep
    _pop = _stack.pop
    _fpop = list(map(float, _fstack)).pop
    dout = np.zeros_like(out)
    dp = [0.0] * len(p)
    dx = 0.0
    d_t10 = _seed
    # from: return np.sum(out * out)
    d_t9 = sum_vjp(d_t10, _t9, None, False, True)
    dout += d_t9 * out
    dout += d_t9 * out
    # from: for i in range(len(p)):
    for i in range(_n1 - 1, -1, -1):
        # from: if p[i] > 0.0:
        if _t4:
            # from: out[i] = x * p[i]
            d_t6 = dout[i]
            dout[i] = 0.0
            dx = dx + d_t6 * _t5
            dp[i] += d_t6 * x
            _t5 = _fpop()
        else:
            # from: out[i] = math.sin(p[i])
            d_t8 = dout[i]
            dout[i] = 0.0
            d_t7 = d_t8 * math.cos(_t7)
            dp[i] += d_t7
            _t7 = _fpop()
        _t4 = _pop()
    # from: out = np.zeros(len(p))
    dp = np.array(dp)
    return _value, (dx, dp)
