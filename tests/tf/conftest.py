"""conftest.py: quiet TensorFlow, and helpers shared by the scanforge_tf tests."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

DTYPES = {"float32": tf.float32, "float16": tf.float16, "bfloat16": tf.bfloat16}
# docs/math.md's bars: forward out, every gradient.
FWD_BAR = {"float32": 1e-5, "float16": 5e-3, "bfloat16": 5e-3}
GRAD_BAR = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}


def to_tf(p, dtype):
    """The problem's inputs as tensors (activations and variable B/C in `dtype`, the rest
    float32) and, from those very values, the float64 problem the reference evaluates."""
    T = DTYPES[dtype]
    kinds = dict(u="act", delta="act", z="act", A="f32", D="f32", delta_bias="f32", h0="f32",
                 B="act" if p["B"].ndim == 4 else "f32", C="act" if p["C"].ndim == 4 else "f32")
    tensors, exact = {}, {"softplus": p["softplus"]}
    for name, kind in kinds.items():
        x = p.get(name)
        if x is None:
            tensors[name], exact[name] = None, None
            continue
        t = tf.constant(x, tf.float32)
        t = tf.cast(t, T) if kind == "act" else t
        tensors[name] = t
        exact[name] = tf.cast(t, tf.float64).numpy()
    return tensors, exact


@pytest.fixture
def rng(request):
    return np.random.default_rng(abs(hash(request.node.name)) % (2**32))


# Where the op's own tests run: the CPU, and the first GPU where TensorFlow sees one.
DEVICES = ["/CPU:0"] + (["/GPU:0"] if tf.config.list_physical_devices("GPU") else [])


@pytest.fixture
def full_cuda_work_on_cpu():
    """Work that needs TensorFlow's full CUDA libraries runs on the CPU on a GPU machine:
    Keras layers with matmul or convolution (Dense, Conv1D: cuBLAS, cuDNN) and XLA's GPU
    compiler (libdevice, ptxas). The device machine's TensorFlow carries stand-ins for those
    libraries (docs/device.md); the op itself needs none of them. With
    SCANFORGE_TEST_GPU_LAYERS=1 (a GPU with the full CUDA libraries) it all stays on the GPU."""
    if len(DEVICES) == 1 or os.environ.get("SCANFORGE_TEST_GPU_LAYERS") == "1":
        yield
        return
    with tf.device("/CPU:0"):
        yield
