"""ops.py: loads the op library; selective_scan (Mamba's selective_scan_fn) and its gradient."""
import os

import tensorflow as tf

_LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_scanforge_ops.so")


def _load():
    try:
        return tf.load_op_library(_LIBRARY)
    except (tf.errors.NotFoundError, OSError) as e:
        try:
            from scanforge_tf._build_info import TENSORFLOW_VERSION as built_for
        except ImportError:
            built_for = "unknown"
        raise ImportError(
            f"scanforge_tf: cannot load {_LIBRARY} (built for TensorFlow {built_for}, running "
            f"{tf.__version__}): {e}. Rebuild it against this TensorFlow: "
            "pip install --no-build-isolation <scanforge checkout>") from e


_ops = _load()

_ACTIVATION_DTYPES = (tf.float32, tf.float16, tf.bfloat16)


def _invalid(message):
    return tf.errors.InvalidArgumentError(None, None, message)


def _require_dtype(name, x, dtype, why):
    if x.dtype != dtype:
        raise _invalid(f"{name}: expected dtype {dtype.name} ({why}), got {x.dtype.name}")


def _optional(name, x, dtype, why):
    """An absent optional input is an empty tensor with has_<name> False."""
    if x is None:
        return tf.zeros([0], dtype), False
    x = tf.convert_to_tensor(x)
    _require_dtype(name, x, dtype, why)
    return x, True


def selective_scan(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                   return_last_state=False, initial_state=None, deterministic=False):
    """The selective scan of Mamba's selective_scan_fn (docs/math.md), on CPU or GPU.

    u, delta, z: (batch, dim, L) in float32, float16 or bfloat16 (all one dtype).
    A: (dim, N) float32. B, C: (dim, N) float32 (fixed), or (batch, N, L) or
    (batch, G, N, L) in u's dtype (variable; G divides dim). D, delta_bias: (dim,) float32.
    initial_state (extension): (batch, dim, N) float32, the state before the first step.
    Returns out (batch, dim, L) in u's dtype, or (out, last_state) with last_state
    (batch, dim, N) float32 when return_last_state. Differentiable in every tensor input.
    deterministic: the gradient's sums in a fixed order on the GPU (bitwise reproducible,
    about 1.1-1.2x the time); also on whenever tf.config.experimental.enable_op_determinism
    is.
    Bad inputs raise InvalidArgumentError naming the argument.
    """
    u = tf.convert_to_tensor(u)
    if u.dtype not in _ACTIVATION_DTYPES:
        raise _invalid(f"u: expected dtype float32, float16 or bfloat16, got {u.dtype.name}")
    T = u.dtype
    delta = tf.convert_to_tensor(delta)
    _require_dtype("delta", delta, T, "u's dtype")
    A = tf.convert_to_tensor(A)
    _require_dtype("A", A, tf.float32, "A is float32")
    B = tf.convert_to_tensor(B)
    C = tf.convert_to_tensor(C)
    squeezed = []
    for name, x in (("B", B), ("C", C)):
        if x.shape.rank == 2:
            _require_dtype(name, x, tf.float32, f"a fixed (dim, N) {name} is float32")
        elif x.shape.rank in (3, 4):
            _require_dtype(name, x, T, f"a variable {name} has u's dtype")
        # (batch, N, L) is one group: the op takes (batch, 1, N, L).
        squeezed.append(tf.expand_dims(x, 1) if x.shape.rank == 3 else x)
    B, C = squeezed
    D, has_D = _optional("D", D, tf.float32, "D is float32")
    z, has_z = _optional("z", z, T, "u's dtype")
    delta_bias, has_delta_bias = _optional("delta_bias", delta_bias, tf.float32, "delta_bias is float32")
    h0, has_h0 = _optional("initial_state", initial_state, tf.float32, "states are float32")
    try:
        out, last_state, _ = _ops.mamba_selective_scan(
            u, delta, A, B, C, D, z, delta_bias, h0, delta_softplus=bool(delta_softplus),
            has_D=has_D, has_z=has_z, has_delta_bias=has_delta_bias, has_h0=has_h0,
            deterministic=bool(deterministic))
    except ValueError as e:
        # Graph construction reports shape-inference errors as ValueError; eager runs
        # raise InvalidArgumentError with the same message. One type for both.
        raise _invalid(str(e)) from e
    return (out, last_state) if return_last_state else out


@tf.RegisterGradient("MambaSelectiveScan")
def _selective_scan_grad(op, dout, d_last_state, _d_saved_states):
    """Every gradient of docs/math.md from one MambaSelectiveScanGrad call."""
    flags = {name: op.get_attr(name) for name in
             ("delta_softplus", "has_D", "has_z", "has_delta_bias", "has_h0", "deterministic")}
    u, delta, A, B, C, D, z, delta_bias, h0 = op.inputs
    if dout is None:
        dout = tf.zeros_like(op.outputs[0])
    has_d_last_state = d_last_state is not None
    if not has_d_last_state:
        d_last_state = tf.zeros([0], tf.float32)
    du, ddelta, dA, dB, dC, dD, dz, ddelta_bias, dh0 = _ops.mamba_selective_scan_grad(
        u, delta, A, B, C, D, z, delta_bias, h0, op.outputs[2], dout, d_last_state,
        has_d_last_state=has_d_last_state, **flags)
    # dB and dC come back float32; a variable B or C is in u's dtype.
    dB = tf.cast(dB, B.dtype)
    dC = tf.cast(dC, C.dtype)
    return [du, ddelta, dA, dB, dC,
            dD if flags["has_D"] else None,
            dz if flags["has_z"] else None,
            ddelta_bias if flags["has_delta_bias"] else None,
            dh0 if flags["has_h0"] else None]
