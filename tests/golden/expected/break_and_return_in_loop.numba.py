def break_and_return_in_loop_grad(x, p, _seed=1.0, _ws=()):
    """Value and reverse-mode gradient of break_and_return_in_loop with respect to x, p.

    The loop on line 53 saves per iteration: s and 3 intermediate values.
    """
    # ---- forward sweep
    _tape_t3_1 = _ws[0]
    _k_t3_1 = 0
    _tape_t4_1 = _ws[1]
    _k_t4_1 = 0
    _tape_s_1 = _ws[2]
    _k_s_1 = 0
    _tape_t7_1 = _ws[3]
    _k_t7_1 = 0
    _t3 = False
    _t4 = False
    _t7 = False
    _returned1 = False
    # from: s = 0.0
    s = 0.0
    # from: for i in range(len(p)):
    _t1 = len(p)
    _leave1 = False
    _skip1 = False
    _n1 = 0
    for i in range(0, _t1, 1):
        # from: for i in range(len(p)):
        _n1 = _n1 + 1
        _skip1 = False
        # from: if p[i] < 0.0:
        _t2 = p[i]
        if _k_t3_1 == _tape_t3_1.shape[0]:
            _tape_t3_1 = reserve(_tape_t3_1, _k_t3_1 + 1)
        _tape_t3_1[_k_t3_1] = _t3
        _k_t3_1 += 1
        _t3 = _t2 < 0.0
        if _t3:
            # from: break
            _skip1 = True
            _leave1 = True
        if _k_t4_1 == _tape_t4_1.shape[0]:
            _tape_t4_1 = reserve(_tape_t4_1, _k_t4_1 + 1)
        _tape_t4_1[_k_t4_1] = _t4
        _k_t4_1 += 1
        _t4 = not _skip1
        # from: s = s * x + p[i]
        if _t4:
            # from: s = s * x + p[i]
            _t5 = s * x
            _t6 = p[i]
            if _k_s_1 == _tape_s_1.shape[0]:
                _tape_s_1 = reserve(_tape_s_1, _k_s_1 + 1)
            _tape_s_1[_k_s_1] = s
            _k_s_1 += 1
            s = _t5 + _t6
            # from: if s > 100.0:
            if _k_t7_1 == _tape_t7_1.shape[0]:
                _tape_t7_1 = reserve(_tape_t7_1, _k_t7_1 + 1)
            _tape_t7_1[_k_t7_1] = _t7
            _k_t7_1 += 1
            _t7 = s > 100.0
            if _t7:
                # from: return s * s
                _result1 = s * s
                _returned1 = True
                _skip1 = True
                _leave1 = True
        if _leave1:
            break
    _t9 = not _returned1
    # from: return s
    if _t9:
        # from: return s
        _result1 = s
        _returned1 = True
    _value = _result1
    # ---- reverse sweep
    dp = np.zeros_like(p)
    ds = 0.0
    dx = 0.0
    d_result1 = _seed
    # from: return s
    if _t9:
        # from: return s
        ds = ds + d_result1
        d_result1 = 0.0
    # from: for i in range(len(p)):
    for i in range(_n1 - 1, -1, -1):
        # from: s = s * x + p[i]
        if _t4:
            # from: if s > 100.0:
            if _t7:
                # from: return s * s
                d_t8 = d_result1
                d_result1 = 0.0
                ds = ds + d_t8 * s
                ds = ds + d_t8 * s
            _k_t7_1 -= 1
            _t7 = _tape_t7_1[_k_t7_1]
            # from: s = s * x + p[i]
            d_t5 = ds
            _k_s_1 -= 1
            s = _tape_s_1[_k_s_1]
            dp[i] += ds
            ds = d_t5 * x
            dx = dx + d_t5 * s
        # from: if p[i] < 0.0:
        _k_t4_1 -= 1
        _t4 = _tape_t4_1[_k_t4_1]
        _k_t3_1 -= 1
        _t3 = _tape_t3_1[_k_t3_1]
    # from: s = 0.0
    return _value, (dx, dp), (_tape_t3_1, _tape_t4_1, _tape_s_1, _tape_t7_1)
