def while_loop_grad(x, _seed=1.0, _ws=()):
    """Value and reverse-mode gradient of while_loop with respect to x.

    The loop on line 45 saves per iteration: y and 1 intermediate value.
    """
    # ---- forward sweep
    _tape_y_1 = _ws[0]
    _k_y_1 = 0
    _tape_cond2_1 = _ws[1]
    _k_cond2_1 = 0
    _cond2 = False
    # from: y = x
    y = x
    # from: it = 0
    it = 0
    # from: while y > 0.1 and it < 50:
    _t2 = y > 0.1
    _t1 = _t2
    _cond1 = _t1
    if _cond1:
        # from: while y > 0.1 and it < 50:
        _t3 = it < 50
        _t1 = _t3
    _n1 = 0
    while _t1:
        # from: while y > 0.1 and it < 50:
        _n1 = _n1 + 1
        # from: y = 0.5 * y + 0.01 * math.sin(y)
        _t4 = 0.5 * y
        _t5 = math.sin(y)
        _t6 = 0.01 * _t5
        if _k_y_1 == _tape_y_1.shape[0]:
            _tape_y_1 = reserve(_tape_y_1, _k_y_1 + 1)
        _tape_y_1[_k_y_1] = y
        _k_y_1 += 1
        y = _t4 + _t6
        # from: it += 1
        it = it + 1
        # from: while y > 0.1 and it < 50:
        _t9 = y > 0.1
        _t8 = _t9
        if _k_cond2_1 == _tape_cond2_1.shape[0]:
            _tape_cond2_1 = reserve(_tape_cond2_1, _k_cond2_1 + 1)
        _tape_cond2_1[_k_cond2_1] = _cond2
        _k_cond2_1 += 1
        _cond2 = _t8
        if _cond2:
            # from: while y > 0.1 and it < 50:
            _t10 = it < 50
            _t8 = _t10
        _t1 = _t8
    # from: return y * x
    _t11 = y * x
    _value = _t11
    # ---- reverse sweep
    d_t11 = _seed
    # from: return y * x
    dy = d_t11 * x
    dx = d_t11 * y
    # from: while y > 0.1 and it < 50:
    for _ in range(_n1):
        # from: while y > 0.1 and it < 50:
        _k_cond2_1 -= 1
        _cond2 = _tape_cond2_1[_k_cond2_1]
        # from: y = 0.5 * y + 0.01 * math.sin(y)
        d_t4 = dy
        _k_y_1 -= 1
        y = _tape_y_1[_k_y_1]
        d_t5 = dy * 0.01
        dy = d_t5 * math.cos(y)
        dy = dy + d_t4 * 0.5
    # from: y = x
    dx = dx + dy
    return _value, (dx,), (_tape_y_1, _tape_cond2_1)
