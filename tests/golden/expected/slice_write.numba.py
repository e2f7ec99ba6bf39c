def slice_write_grad(u, c, _seed=1.0):
    """Value and reverse-mode gradient of slice_write with respect to u, c.

    The loop on line 68 saves per iteration: 1 intermediate value.
    """
    # ---- forward sweep
    _tape_t7_1 = []
    _t7 = np.zeros((0,))
    # from: v = u.copy()
    v = u.copy()
    # from: for step in range(3):
    _n1 = trip_count(0, 3, 1)
    for step in range(0, 3, 1):
        # from: v[1:-1] = v[1:-1] + c * (v[2:] - 2.0 * v[1:-1] + v[:-2])
        _tape_t7_1.append(_t7)
        _t7 = v[2:] - 2.0 * v[1:-1] + v[:-2]
        add_product_into(v[1:-1], c, _t7)
    # from: return np.sum(v * v)
    _t10 = v * v
    _t11 = np.sum(_t10)
    _value = _t11
    # ---- reverse sweep
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
        d_t9 = dv[1:-1]
        dc = dc + unbroadcast_product(d_t9, _t7, c)
        d_t7 = d_t9 * c
        _t7 = _tape_t7_1.pop()
        add_into(dv[:-2], d_t7)
        add_product_into(dv[1:-1], d_t7, -2.0)
        add_into(dv[2:], d_t7)
    # from: v = u.copy()
    du = array_vjp(dv, u)
    return _value, (du, dc)
