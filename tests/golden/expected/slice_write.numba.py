def slice_write_grad(u, c, _seed=1.0, _ws=()):
    """Value and reverse-mode gradient of slice_write with respect to u, c."""
    # ---- forward sweep
    _tape_t4_1 = _ws[0]
    _k_t4_1 = 0
    _tape_t5_1 = _ws[1]
    _k_t5_1 = 0
    _tape_t8_1 = _ws[2]
    _k_t8_1 = 0
    _tape_t9_1 = _ws[3]
    _k_t9_1 = 0
    _tape_t7_1 = []
    _tape_v_rows_1 = []
    _t4 = np.zeros((0,))
    _t5 = np.zeros((0,))
    _t7 = np.zeros((0,))
    _t8 = np.zeros((0,))
    _t9 = np.zeros((0,))
    # from: v = u.copy()
    v = u.copy()
    # from: for step in range(3):
    _n1 = trip_count(0, 3, 1)
    _tape_t4_1 = reserve(_tape_t4_1, _k_t4_1 + _n1)
    _tape_t5_1 = reserve(_tape_t5_1, _k_t5_1 + _n1)
    _tape_t8_1 = reserve(_tape_t8_1, _k_t8_1 + _n1)
    _tape_t9_1 = reserve(_tape_t9_1, _k_t9_1 + _n1)
    for step in range(0, 3, 1):
        # from: v[1:-1] = v[1:-1] + c * (v[2:] - 2.0 * v[1:-1] + v[:-2])
        _t1 = v[1:-1]
        _t2 = v[2:]
        _t3 = v[1:-1]
        _tape_t4_1[_k_t4_1] = _t4.shape[0]
        _k_t4_1 += 1
        _t4 = 2.0 * _t3
        _tape_t5_1[_k_t5_1] = _t5.shape[0]
        _k_t5_1 += 1
        _t5 = _t2 - _t4
        _t6 = v[:-2]
        _tape_t7_1.append(_t7)
        _t7 = _t5 + _t6
        _tape_t8_1[_k_t8_1] = _t8.shape[0]
        _k_t8_1 += 1
        _t8 = c * _t7
        _tape_t9_1[_k_t9_1] = _t9.shape[0]
        _k_t9_1 += 1
        _t9 = _t1 + _t8
        _tape_v_rows_1.append(v[1:-1].copy())
        v[1:-1] = _t9
    # from: return np.sum(v * v)
    _t10 = v * v
    _t11 = np.sum(_t10)
    _value = _t11
    # ---- reverse sweep
    du = np.zeros_like(u)
    dv = np.zeros_like(v)
    dc = 0.0
    d_t11 = _seed
    # from: return np.sum(v * v)
    d_t10 = sum_vjp(d_t11, _t10, None, False, True)
    dv += d_t10 * v
    dv += d_t10 * v
    # from: for step in range(3):
    for _ in range(_n1):
        # from: v[1:-1] = v[1:-1] + c * (v[2:] - 2.0 * v[1:-1] + v[:-2])
        d_t9 = unbroadcast(dv[1:-1].copy(), _t9)
        dv[1:-1] = 0.0
        v[1:-1] = _tape_v_rows_1.pop()
        _t1 = v[1:-1]
        d_t1 = unbroadcast(d_t9, _t1)
        d_t8 = unbroadcast(d_t9, _t8)
        _k_t9_1 -= 1
        _t9 = with_shape(_t9, (_tape_t9_1[_k_t9_1],))
        dc = dc + unbroadcast_product(d_t8, _t7, c)
        d_t7 = d_t8 * c
        _k_t8_1 -= 1
        _t8 = with_shape(_t8, (_tape_t8_1[_k_t8_1],))
        _t6 = v[:-2]
        d_t5 = unbroadcast(d_t7, _t5)
        d_t6 = unbroadcast(d_t7, _t6)
        _t7 = _tape_t7_1.pop()
        add_into(dv[:-2], d_t6)
        _t2 = v[2:]
        d_t2 = unbroadcast(d_t5, _t2)
        d_t4 = unbroadcast(-d_t5, _t4)
        _k_t5_1 -= 1
        _t5 = with_shape(_t5, (_tape_t5_1[_k_t5_1],))
        d_t3 = d_t4 * 2.0
        _k_t4_1 -= 1
        _t4 = with_shape(_t4, (_tape_t4_1[_k_t4_1],))
        add_into(dv[1:-1], d_t3)
        add_into(dv[2:], d_t2)
        add_into(dv[1:-1], d_t1)
    # from: v = u.copy()
    du += array_vjp(dv, u)
    return _value, (du, dc), (_tape_t4_1, _tape_t5_1, _tape_t8_1, _tape_t9_1)
