def log_softmax_loss_grad(z, y, _seed=1.0):
    """Value and reverse-mode gradient of log_softmax_loss with respect to z."""
    # ---- forward sweep
    _tape_z_1 = []
    # from: z = z - np.max(z, axis=1, keepdims=True)
    _t1 = max_numba(z, axis=1, keepdims=True)
    _tape_z_1.append(z)
    z = z - _t1
    # from: logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    _t3 = exp_numba(z)
    _t4 = sum_numba(_t3, axis=1, keepdims=True)
    _t5 = log_numba(_t4)
    logp = z - _t5
    # from: return -np.sum(y * logp)
    _t6 = y * logp
    _t7 = np.sum(_t6)
    _t8 = -_t7
    _value = _t8
    # ---- reverse sweep
    dlogp = np.zeros_like(logp)
    dz = np.zeros_like(z)
    d_t8 = _seed
    # from: return -np.sum(y * logp)
    d_t6 = sum_vjp(-d_t8, _t6, None, False, True)
    dlogp += unbroadcast(d_t6 * y, logp)
    # from: logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    dz += unbroadcast(dlogp, z)
    d_t5 = unbroadcast(-dlogp, _t5)
    d_t4 = divided(d_t5, _t4)
    d_t3 = sum_vjp(d_t4, _t3, 1, True, True)
    dz += d_t3 * _t3
    # from: z = z - np.max(z, axis=1, keepdims=True)
    d_t2 = dz
    z = _tape_z_1.pop()
    dz = np.zeros_like(z)
    dz += unbroadcast(d_t2, z)
    d_t1 = unbroadcast(-d_t2, _t1)
    dz += max_vjp(d_t1, _t1, z, 1, True, True)
    return _value, (dz,)
