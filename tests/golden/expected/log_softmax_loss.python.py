def log_softmax_loss_grad(z, y, _seed=1.0):
    """Value and reverse-mode gradient of log_softmax_loss with respect to z."""
    # ---- forward sweep
    _stack = []
    _push = _stack.append
    # from: z = z - np.max(z, axis=1, keepdims=True)
    _t1 = np.max(z, axis=1, keepdims=True)
    _t2 = z - _t1
    _push(z)
    z = _t2
    # from: logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    _t3 = np.exp(z)
    _t4 = np.sum(_t3, axis=1, keepdims=True)
    _t5 = np.log(_t4)
    logp = z - _t5
    # from: return -np.sum(y * logp)
    _t6 = y * logp
    _t7 = np.sum(_t6)
    _t8 = -_t7
    _value = _t8
    # ---- reverse sweep
    _pop = _stack.pop
    d_t8 = _seed
    # from: return -np.sum(y * logp)
    d_t6 = sum_vjp(-d_t8, _t6, None, False, True)
    dlogp = unbroadcast(d_t6 * y, logp)
    # from: logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    dz = unbroadcast(dlogp, z)
    d_t5 = unbroadcast(-dlogp, _t5)
    d_t4 = divided(d_t5, _t4)
    d_t3 = sum_vjp(d_t4, _t3, 1, True, True)
    dz = dz + d_t3 * _t3
    # from: z = z - np.max(z, axis=1, keepdims=True)
    d_t2 = dz
    z = _pop()
    dz = unbroadcast(d_t2, z)
    d_t1 = unbroadcast(-d_t2, _t1)
    dz = dz + max_vjp(d_t1, _t1, z, 1, True, True)
    return _value, (dz,)
