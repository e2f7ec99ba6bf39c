def tuple_returning_call_grad(r, t, _seed=1.0):
    """Value and reverse-mode gradient of tuple_returning_call with respect to r, t."""
    # ---- forward sweep
    # from: a, b = _polar(r, t)
    _polar_r_1 = r
    _polar_t_1 = t
    _t1 = math.cos(_polar_t_1)
    _t2 = _polar_r_1 * _t1
    _t3 = math.sin(_polar_t_1)
    _t5 = (_t2, _polar_r_1 * _t3)
    _polar_result1 = _t5
    a = _polar_result1[0]
    b = _polar_result1[1]
    # from: c, d = _polar(a + b, t * 0.5)
    _polar_r_2 = a + b
    _polar_t_2 = t * 0.5
    _t10 = math.cos(_polar_t_2)
    _t11 = _polar_r_2 * _t10
    _t12 = math.sin(_polar_t_2)
    _t14 = (_t11, _polar_r_2 * _t12)
    _polar_result2 = _t14
    c = _polar_result2[0]
    d = _polar_result2[1]
    # from: return a * d - b * c
    _t19 = a * d - b * c
    _value = _t19
    # ---- reverse sweep
    d_polar_result1 = 0.0
    d_polar_result2 = 0.0
    d_t19 = _seed
    # from: return a * d - b * c
    d_t18 = -d_t19
    db = d_t18 * c
    dc = d_t18 * b
    da = d_t19 * d
    dd = d_t19 * a
    # from: c, d = _polar(a + b, t * 0.5)
    d_polar_result2 = add_item(d_polar_result2, _polar_result2, 1, dd)
    d_polar_result2 = add_item(d_polar_result2, _polar_result2, 0, dc)
    d_t11 = item_cotangent(d_polar_result2, 0)
    d_t13 = item_cotangent(d_polar_result2, 1)
    d_polar_r_2 = d_t13 * _t12
    d_t12 = d_t13 * _polar_r_2
    d_polar_t_2 = d_t12 * math.cos(_polar_t_2)
    d_polar_r_2 = d_polar_r_2 + d_t11 * _t10
    d_t10 = d_t11 * _polar_r_2
    d_polar_t_2 = d_polar_t_2 + -d_t10 * math.sin(_polar_t_2)
    dt = d_polar_t_2 * 0.5
    da = da + d_polar_r_2
    db = db + d_polar_r_2
    # from: a, b = _polar(r, t)
    d_polar_result1 = add_item(d_polar_result1, _polar_result1, 1, db)
    d_polar_result1 = add_item(d_polar_result1, _polar_result1, 0, da)
    d_t2 = item_cotangent(d_polar_result1, 0)
    d_t4 = item_cotangent(d_polar_result1, 1)
    d_polar_r_1 = d_t4 * _t3
    d_t3 = d_t4 * _polar_r_1
    d_polar_t_1 = d_t3 * math.cos(_polar_t_1)
    d_polar_r_1 = d_polar_r_1 + d_t2 * _t1
    d_t1 = d_t2 * _polar_r_1
    d_polar_t_1 = d_polar_t_1 + -d_t1 * math.sin(_polar_t_1)
    dt = dt + d_polar_t_1
    dr = d_polar_r_1
    return _value, (dr, dt)
