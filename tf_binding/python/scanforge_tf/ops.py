"""ops.py: loads the op library; selective_scan (Mamba's selective_scan_fn) and its gradient."""
import os
import re

import tensorflow as tf
from tensorflow.python.eager import context as _eager_context

_LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_scanforge_ops.so")
_REBUILD = ("rebuild it against this TensorFlow: pip install --no-build-isolation --no-deps "
            "--force-reinstall <scanforge checkout>")
# Libraries the op links besides TensorFlow's, and the Debian/Ubuntu packages that carry them.
_DEBIAN_PACKAGES = {"liblua5.4.so.0": "liblua5.4-0", "libjansson.so.4": "libjansson4",
                    "libxxhash.so.0": "libxxhash0"}


def _major_minor(version):
    return ".".join(version.split(".")[:2])


def check_tensorflow_version(built_for, running):
    """Raises ImportError when the op was built for another TensorFlow release: an op library
    loads only under the TensorFlow (major.minor) it was compiled against, and loading it
    under another can crash the process instead of failing."""
    if built_for and _major_minor(built_for) != _major_minor(running):
        raise ImportError(
            f"scanforge_tf: the op library was built against TensorFlow {built_for}, but this "
            f"Python runs TensorFlow {running}; install TensorFlow {_major_minor(built_for)}.* "
            f"or {_REBUILD}")


def load_failure_message(path, error, built_for, running):
    """What tf.load_op_library's error means, naming the cause: a missing library, a symbol
    this TensorFlow lacks, or else the loader's own words."""
    missing = re.search(r"([\w.+-]+\.so[\w.]*): cannot open shared object file", error)
    if missing:
        library = missing.group(1)
        package = _DEBIAN_PACKAGES.get(library)
        where = (f" (Debian/Ubuntu package {package}; scripts/install-deps.sh installs every "
                 "build dependency)" if package else "")
        return (f"scanforge_tf: cannot load {path}: it needs the shared library {library}, "
                f"which is not installed or not on the loader's path{where}. Loader: {error}")
    symbol = re.search(r"undefined symbol: (\S+)", error)
    if symbol:
        return (f"scanforge_tf: cannot load {path}: symbol {symbol.group(1)} is missing, so the "
                f"library does not match TensorFlow {running} (built for {built_for}); "
                f"{_REBUILD}. Loader: {error}")
    return f"scanforge_tf: cannot load {path} (built for TensorFlow {built_for}): {error}"


def _load(path=_LIBRARY):
    try:
        from scanforge_tf._build_info import TENSORFLOW_VERSION as built_for
    except ImportError:
        built_for = None
    check_tensorflow_version(built_for, tf.__version__)
    try:
        return tf.load_op_library(path)
    except (tf.errors.NotFoundError, OSError) as e:
        raise ImportError(load_failure_message(path, str(e), built_for or "an unknown version",
                                               tf.__version__)) from e


_ops = _load()

_ACTIVATION_DTYPES = (tf.float32, tf.float16, tf.bfloat16)

# Eager calls reuse empty tensors for absent optional inputs (see _empties):
# making a fresh one costs more than a tiny scan (bench/tf_eager_overhead.py).
_eager_empty = {}


def _invalid(message):
    return tf.errors.InvalidArgumentError(None, None, message)


def _as_tensor(x):
    return x if x is None or isinstance(x, tf.Tensor) else tf.convert_to_tensor(x)


def _empties(T, eager):
    """Empty float32 and T tensors, the values of absent optional inputs (whose has_<name>
    attr is then False). Eager calls reuse one pair per (T, device)."""
    if not eager:
        return tf.zeros([0], tf.float32), tf.zeros([0], T)
    key = (T, _eager_context.context().device_name)
    pair = _eager_empty.get(key)
    if pair is None:
        pair = _eager_empty[key] = (tf.zeros([0], tf.float32), tf.zeros([0], T))
    return pair


def _fill_absent(D, z, delta_bias, h0, T, eager):
    """D, z, delta_bias, h0 with each absent one an empty tensor of its dtype (z's is T)."""
    if D is None or z is None or delta_bias is None or h0 is None:
        empty_f32, empty_T = _empties(T, eager)
        D = empty_f32 if D is None else D
        z = empty_T if z is None else z
        delta_bias = empty_f32 if delta_bias is None else delta_bias
        h0 = empty_f32 if h0 is None else h0
    return D, z, delta_bias, h0


def _check_dtypes(u, delta, A, B, C, D, z, delta_bias, initial_state):
    """Raises InvalidArgumentError naming the first input whose dtype the op refuses."""
    T = u.dtype
    if T not in _ACTIVATION_DTYPES:
        raise _invalid(f"u: expected dtype float32, float16 or bfloat16, got {T.name}")
    expected = [("delta", delta, T, "u's dtype"), ("A", A, tf.float32, "A is float32")]
    for name, x in (("B", B), ("C", C)):
        # Another or an unknown rank: the op's shape check names the argument.
        if x.shape.rank == 2:
            expected.append((name, x, tf.float32, f"a fixed (dim, N) {name} is float32"))
        elif x.shape.rank in (3, 4):
            expected.append((name, x, T, f"a variable {name} has u's dtype"))
    expected += [("D", D, tf.float32, "D is float32"), ("z", z, T, "u's dtype"),
                 ("delta_bias", delta_bias, tf.float32, "delta_bias is float32"),
                 ("initial_state", initial_state, tf.float32, "states are float32")]
    for name, x, dtype, why in expected:
        if x is not None and x.dtype != dtype:
            raise _invalid(f"{name}: expected dtype {dtype.name} ({why}), got {x.dtype.name}")


def _refuse_xla():
    """The op has no XLA kernel. Inside a function compiled with jit_compile=True, XLA would
    fail later with "No registered 'MambaSelectiveScan' OpKernel for XLA_CPU_JIT devices";
    say instead what to do (docs/design-tf-xla.md)."""
    enclosing_xla = getattr(tf.__internal__, "get_enclosing_xla_context", None)
    if enclosing_xla is not None and enclosing_xla() is not None:
        raise tf.errors.UnimplementedError(
            None, None,
            "scanforge_tf.selective_scan cannot run inside a function compiled with XLA "
            "(jit_compile=True): the MambaSelectiveScan op has no XLA kernel. Call it outside "
            "the compiled function: drop jit_compile=True from the tf.function, or compile the "
            "Keras model with jit_compile=False or the default 'auto' (the scanforge layers "
            "set supports_jit=False). Only the parts around the scan can go in their own "
            "tf.function(jit_compile=True).")


def selective_scan(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                   return_last_state=False, initial_state=None, deterministic=False,
                   save_block_states=False):
    """The selective scan of Mamba's selective_scan_fn (docs/math.md), on CPU or GPU.

    u, delta, z: (batch, dim, L) in float32, float16 or bfloat16 (all one dtype).
    A: (dim, N) float32. B, C: (dim, N) float32 (fixed), or (batch, N, L) or
    (batch, G, N, L) in u's dtype (variable; G divides dim). D, delta_bias: (dim,) float32.
    initial_state (extension): (batch, dim, N) float32, the state before the first step.
    Returns out (batch, dim, L) in u's dtype, or (out, last_state) with last_state
    (batch, dim, N) float32 when return_last_state. Differentiable in every tensor input.
    deterministic: the gradient's sums in a fixed order on the GPU (bitwise reproducible,
    about 1.1-1.4x the backward's time); also on whenever
    tf.config.experimental.enable_op_determinism is.
    save_block_states: for training on the GPU: the forward saves the state at the start of
    every block of steps the backward will run (every 4-16 steps instead of every 64-512),
    so the gradient recomputes none: the scan's forward plus backward for a Mamba-130M
    layer about 12% faster on an H200, at N x 4 / 8 more bytes per step and channel kept for the gradient
    (201 MB for batch 8, 1536 channels, 2048 steps, N 16) and a forward about 20% slower;
    leave it off for inference. docs/design-block-states.md has the measurements.
    Bad inputs raise InvalidArgumentError naming the argument. Inside a function compiled
    with XLA (jit_compile=True) it raises UnimplementedError: the op has no XLA kernel.
    """
    inputs = (_as_tensor(u), _as_tensor(delta), _as_tensor(A), _as_tensor(B), _as_tensor(C),
              _as_tensor(D), _as_tensor(z), _as_tensor(delta_bias), _as_tensor(initial_state))
    eager = tf.executing_eagerly()
    if not eager:  # tracing a graph: checks cost nothing per run
        _refuse_xla()
        _check_dtypes(*inputs)
    u, delta, A, B, C = inputs[:5]
    # The op's attrs say which optional inputs carry data; the absent ones are empty.
    D, z, delta_bias, h0 = _fill_absent(*inputs[5:], u.dtype, eager)
    try:
        out, last_state, _ = _ops.mamba_selective_scan(
            u, delta, A, B, C, D, z, delta_bias, h0, delta_softplus=bool(delta_softplus),
            has_D=inputs[5] is not None, has_z=inputs[6] is not None,
            has_delta_bias=inputs[7] is not None, has_h0=inputs[8] is not None,
            deterministic=bool(deterministic), state_interval=-1 if save_block_states else 0)
    except (tf.errors.OpError, TypeError, ValueError) as e:
        # The op refuses every bad input, but TensorFlow's dtype messages give the input's
        # position, not its name. Eager calls run the named check only now: checking every
        # call costs about as much as a tiny scan (bench/tf_eager_overhead.py).
        _check_dtypes(*inputs)
        if isinstance(e, ValueError):
            # Graph construction reports shape-inference errors as ValueError; eager runs
            # raise InvalidArgumentError with the same message. One type for both.
            raise _invalid(str(e)) from e
        raise
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
        d_last_state = _empties(tf.float32, tf.executing_eagerly())[0]
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
