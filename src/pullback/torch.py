"""pullback inside PyTorch: a function of NumPy arrays, differentiated by pullback,
as a function of ``torch.Tensor``\\ s that ``torch.autograd`` differentiates.

``function(f, jit=...)(*args)`` converts each tensor of ``args`` (pytrees of
tensors, floats, ints and arrays) to NumPy, runs ``f`` (compiled under
``jit=True``), and returns its result as tensors.  Backward runs pullback's vjp of
``f``; with ``create_graph=True`` the backward is itself an autograd node, whose
backward is the vjp of the vjp (:mod:`pullback.interop`), so ``gradgradcheck``
and Hessians by double backward work.

* CPU tensors are viewed by NumPy, not copied (pullback never writes into them);
  CUDA or MPS tensors are copied to the CPU and results copied back to the first
  argument tensor's device.
* float32 and float64: each gradient has its tensor's dtype and device.
* Tensors with a floating dtype carry gradients, as ``requires_grad`` says; ints,
  Python numbers and other leaves are constants.
* ``torch.func.grad``, ``jacrev``, ``jvp``, ``hessian`` and ``vmap`` work: ``vmap``
  runs ``f`` once per example (sequentially), ``jvp`` runs pullback's forward mode;
  a third derivative is refused (:mod:`pullback.interop`).
* The tensor arguments are saved for backward: a backward after one of them was
  changed in place is refused by torch, as for its own operations.
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from .core.trees import flatten, unflatten
from .interop import Level, conform, is_float
from .trees import may_hold_tree

try:
    from torch._C._functorch import peek_interpreter_stack as _peek
except ImportError:      # a torch without functorch's interpreter stack
    _peek = None

__all__ = ["function"]


def function(f, jit=None):
    """``f`` (a function of NumPy arrays and numbers that pullback differentiates) as
    a function of tensors that ``torch.autograd`` differentiates.  ``jit`` chooses
    pullback's backend, as in :func:`pullback.grad`.

    >>> import numpy as np, torch, pullback.torch
    >>> def horner(c, x):
    ...     s = 0.0
    ...     for k in range(c.shape[0]):
    ...         s = s * x + c[k]
    ...     return s
    >>> c = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    >>> pullback.torch.function(horner)(c, 2.0).backward()
    >>> c.grad
    tensor([4., 2., 1.], dtype=torch.float64)
    """
    wrapped = functools.partial(_call, Level(f, jit))
    functools.update_wrapper(wrapped, f)
    return wrapped


class _Tape:
    """What one call's forward hands its backward: the NumPy arguments (a snapshot:
    backward differentiates at them), the value and its structure, and for a level
    above the first, the value of the level below."""

    __slots__ = ("args", "structure", "value", "below_value", "device", "known")

    def __init__(self, below_value=None, known=None):
        self.below_value, self.known = below_value, known


def _call(level: Level, *args, below_value=None):
    known = None
    if below_value is None and not may_hold_tree(args) and not _transformed():
        arrays = tuple([_to_numpy(a) for a in args])
        plain = level.plain(arrays)
        if plain is not None:
            known = plain.value(arrays)
            if type(known) is np.ndarray or isinstance(known, float):
                return _Direct.apply((level, plain, arrays, known), *args)
    leaves, structure = (args, _FLAT) if not may_hold_tree(args) else flatten(args)
    tape = _Tape(below_value, known)
    node = _Apply if _transformed() else _Plain
    out = node.apply(level, structure, tape, *leaves)
    return out[0] if tape.structure is None else unflatten(tape.structure, list(out))


_FLAT = "flat"      # the structure of arguments none of which is a pytree


def _tree(structure, leaves) -> tuple:
    """The arguments of ``structure`` holding ``leaves``."""
    return tuple(leaves) if structure is _FLAT else unflatten(structure, list(leaves))


def _transformed() -> bool:
    """Whether a ``torch.func`` transform is active: only then is the node the
    ``setup_context`` kind, whose ``apply`` binds its arguments with
    ``inspect.signature`` (tens of microseconds a call)."""
    return _peek is None or _peek() is not None


def _forward(level, structure, tape, leaves):
    """The level's value at the tensors ``leaves``, as tensors on their device (never
    sharing memory with an argument: ``f`` may return one, or a view of one)."""
    arrays = [_to_numpy(a) for a in leaves]
    tape.args = _tree(structure, arrays)
    tape.value = tape.known if tape.known is not None else \
        level.value(tape.args, tape.below_value)
    out, tape.structure = flatten(tape.value)
    tape.device = device = _device(leaves)
    return tuple(_to_tensor(_own(v, arrays), device) for v in out)


def _own(value, arrays):
    """``value``, copied if it shares memory with one of ``arrays`` (``f`` may return
    an argument or a view of one, which must not become an alias of its tensor)."""
    if type(value) is np.ndarray:
        for a in arrays:
            if type(a) is np.ndarray and np.may_share_memory(value, a):
                return value.copy()
    return value


def _keep(ctx, leaves, out) -> None:
    """The tensor arguments saved for backward (so that torch refuses a backward after
    one of them was changed in place: the NumPy arguments are views of them), and
    the outputs that are no floats marked so."""
    ctx.save_for_backward(*[a for a in leaves if isinstance(a, torch.Tensor)])
    ints = [t for t in out if not t.is_floating_point()]
    if ints:
        ctx.mark_non_differentiable(*ints)


def _backward(ctx, cotangents):
    """The gradients of the leaves: the next level's value, called on tensors (an
    autograd node itself) where a graph of the gradients is built or ``torch.func``
    runs, else computed here from NumPy views of the cotangents."""
    needs = ctx.needs_input_grad[3:]
    if not any(needs):
        return (None,) * (3 + len(needs))
    ctx.saved_tensors       # raises if an argument was changed in place since forward
    tape = ctx.tape
    nxt = ctx.level.transpose(tape.args)
    if torch.is_grad_enabled() or _transformed():
        c = unflatten(tape.structure, list(cotangents))
        args = _tree(ctx.structure, ctx.leaves)
        out = flatten(_call(nxt, *args, c, below_value=tape.value))[0]
    else:
        c = unflatten(tape.structure, [_to_numpy(t) for t in cotangents])
        out = [_to_tensor(g, tape.device)
               for g in flatten(nxt.value((*tape.args, c), tape.value))[0]]
    out = iter(out)
    args = tape.args if ctx.structure is _FLAT else flatten(tape.args)[0]
    grads = [_gradient(next(out), t) if is_float(a) else None
             for a, t in zip(args, ctx.leaves)]
    return (None, None, None, *[g if need else None for g, need in zip(grads, needs)])


class _Direct(torch.autograd.Function):
    """A first level on tensors, numbers and arrays whose value is one float or array
    (:class:`~pullback.interop.Plain`), outside ``torch.func``: its two compiled
    programs called directly.  A backward that builds a graph goes through the next
    level, as :class:`_Plain`'s does."""

    @staticmethod
    def forward(ctx, call, *leaves):
        level, plain, arrays, value = call
        value = _own(value, arrays)
        ctx.call, ctx.value, ctx.leaves = call, value, leaves
        ctx.save_for_backward(*[a for a in leaves if isinstance(a, torch.Tensor)])
        ctx.device = _device(leaves)
        return _to_tensor(value, ctx.device)

    @staticmethod
    def backward(ctx, cotangent):
        needs = ctx.needs_input_grad[1:]
        ctx.saved_tensors       # raises if an argument was changed in place since forward
        level, plain, arrays, _ = ctx.call
        if torch.is_grad_enabled():
            nxt = level.transpose(arrays)
            out = iter(flatten(_call(nxt, *ctx.leaves, cotangent, below_value=ctx.value))[0])
            grads = [next(out) if is_float(a) else None for a in arrays]
        else:
            c = conform(ctx.value, _to_numpy(cotangent))
            grads = [None if g is None else _to_tensor(g, ctx.device)
                     for g in plain.cotangents(arrays, c)]
        return (None, *[_gradient(g, t) if need and g is not None else None
                        for g, t, need in zip(grads, ctx.leaves, needs)])


class _Plain(torch.autograd.Function):
    """One call of a :class:`~pullback.interop.Level` on tensors, outside
    ``torch.func``."""

    @staticmethod
    def forward(ctx, level, structure, tape, *leaves):
        ctx.level, ctx.structure, ctx.tape, ctx.leaves = level, structure, tape, leaves
        out = _forward(level, structure, tape, leaves)
        _keep(ctx, leaves, out)
        return out

    @staticmethod
    def backward(ctx, *cotangents):
        return _backward(ctx, cotangents)


class _Apply(torch.autograd.Function):
    """One call of a :class:`~pullback.interop.Level` on tensors under ``torch.func``
    (its grad, jvp and vmap rules).  NumPy is seen only inside ``forward``, where
    the tensors are plain: the backward and the jvp call the next level."""

    @staticmethod
    def forward(level, structure, tape, *leaves):
        return _forward(level, structure, tape, leaves)

    @staticmethod
    def setup_context(ctx, inputs, output):
        level, structure, tape, *leaves = inputs
        ctx.level, ctx.structure, ctx.tape, ctx.leaves = level, structure, tape, leaves
        _keep(ctx, leaves, output)

    @staticmethod
    def backward(ctx, *cotangents):
        return _backward(ctx, cotangents)

    @staticmethod
    def jvp(ctx, *tangents):
        tape = ctx.tape
        args = _tree(ctx.structure, ctx.leaves)
        flat = tape.args if ctx.structure is _FLAT else flatten(tape.args)[0]
        dots = _tree(ctx.structure, [_tangent_or_none(t, a) for t, a in
                                     zip(tangents[3:], flat)])
        return tuple(flatten(_call(ctx.level.tangent(tape.args), *args, *dots))[0])

    @staticmethod
    def vmap(info, in_dims, level, structure, tape, *leaves):
        """One call per example, stacked: ``f`` is not batched."""
        dims = in_dims[3:]
        rows, tapes = [], []
        for b in range(info.batch_size):
            one = [a.select(d, b) if d is not None else a for a, d in zip(leaves, dims)]
            tapes.append(_Tape(tape.below_value))
            rows.append(_Apply.apply(level, structure, tapes[-1], *one))
        tape.args, tape.value, tape.structure = tapes[0].args, None, tapes[0].structure
        out = tuple(torch.stack(col) for col in zip(*rows))
        return out, (0,) * len(out)


def _tangent_or_none(t, a):
    """A leaf's tangent as the tangent level takes it: None where the leaf is not a
    float or has no tangent."""
    return t if t is not None and is_float(a) else None


def _device(leaves):
    return next((a.device for a in leaves if isinstance(a, torch.Tensor)), None)


def _to_numpy(a):
    """A tensor as NumPy: a view of a CPU tensor, a copy of another; a 0-d float
    tensor as a Python float."""
    if not isinstance(a, torch.Tensor):
        return a
    if a.ndim == 0 and a.is_floating_point():
        return a.item()
    return a.detach().numpy() if a.is_cpu else a.detach().cpu().numpy()


def _to_tensor(v, device):
    t = torch.from_numpy(v) if type(v) is np.ndarray else torch.as_tensor(np.asarray(v))
    return t if device is None or device.type == "cpu" else t.to(device)


def _gradient(g, like):
    """``g``, a tensor, as the gradient of the leaf ``like`` (None for a leaf that is
    not a tensor: a Python number is a constant to PyTorch)."""
    if not isinstance(like, torch.Tensor):
        return None
    if g.dtype != like.dtype:
        g = g.to(dtype=like.dtype)
    return g if g.shape == like.shape else g.reshape(like.shape)
