"""layers.py: Keras 3 layers on the scanforge op: SelectiveScan and MambaVision's MambaVisionMixer."""
import math

import keras
import numpy as np
import tensorflow as tf

from scanforge_tf.ops import selective_scan


def _training_call(training):
    """True for a call Keras made with training=True (a Python or NumPy bool); False for
    None, False, or a symbolic flag, which cannot be read while tracing."""
    return isinstance(training, (bool, np.bool_)) and bool(training)


@keras.saving.register_keras_serializable(package="scanforge_tf")
class SelectiveScan(keras.layers.Layer):
    """selective_scan as a layer: call(u, delta, A, B, C, D=None, z=None, delta_bias=None,
    initial_state=None) with the shapes of scanforge_tf.selective_scan; deterministic=True
    makes its gradient bitwise reproducible on the GPU; save_block_states=True makes
    training calls (training=True) save every backward block's starting state
    (selective_scan's save_block_states: faster training, more memory)."""

    def __init__(self, delta_softplus=False, return_last_state=False, deterministic=False,
                 save_block_states=False, **kwargs):
        super().__init__(**kwargs)
        self.delta_softplus = delta_softplus
        self.return_last_state = return_last_state
        self.deterministic = deterministic
        self.save_block_states = save_block_states
        self.supports_jit = False  # XLA cannot compile a custom op

    def call(self, u, delta, A, B, C, D=None, z=None, delta_bias=None, initial_state=None, training=None):
        # Under a mixed-precision policy Keras hands every floating input over in the
        # compute dtype; the op takes A, D, delta_bias, the initial state and fixed (2-D)
        # B and C in float32, and delta, z and variable B and C in u's dtype.
        def f32(x):
            return None if x is None else tf.cast(x, tf.float32)

        def like_u(x):
            return None if x is None else tf.cast(x, u.dtype)

        def b_or_c(x):
            return f32(x) if len(x.shape) == 2 else like_u(x)

        A, D, delta_bias, initial_state = f32(A), f32(D), f32(delta_bias), f32(initial_state)
        delta, z, B, C = like_u(delta), like_u(z), b_or_c(B), b_or_c(C)
        return selective_scan(u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias,
                              delta_softplus=self.delta_softplus,
                              return_last_state=self.return_last_state,
                              initial_state=initial_state, deterministic=self.deterministic,
                              save_block_states=self.save_block_states and _training_call(training))

    def get_config(self):
        return {**super().get_config(), "delta_softplus": self.delta_softplus,
                "return_last_state": self.return_last_state, "deterministic": self.deterministic,
                "save_block_states": self.save_block_states}


def _dt_bias_initializer(dt_min=0.001, dt_max=0.1, dt_init_floor=1e-4):
    """MambaVision's dt_proj.bias: softplus^-1 of dt drawn log-uniformly in [dt_min, dt_max]."""
    def init(shape, dtype=None):
        u = np.random.rand(*shape)
        dt = np.exp(u * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
        dt = np.maximum(dt, dt_init_floor)
        return tf.constant(dt + np.log(-np.expm1(-dt)), dtype=dtype or "float32")
    return init


@keras.saving.register_keras_serializable(package="scanforge_tf")
class MambaVisionMixer(keras.layers.Layer):
    """MambaVision's token mixer (NVlabs/MambaVision, MambaVisionMixer), on (batch, L, d_model).

    in_proj -> x, z halves -> depthwise conv1d ('same', no bias) + SiLU on each -> x_proj
    gives dt, B, C -> dt_proj (with its bias) -> selective scan of x with D, delta_bias =
    dt_proj.bias again (the model applies the dt bias twice), softplus, no gate ->
    concat(y, z) -> out_proj. Parameters carry the model's names (in_proj, x_proj,
    dt_proj, A_log, D, out_proj, conv1d_x, conv1d_z); load_torch_state_dict converts a
    PyTorch state dict.
    """

    def __init__(self, d_model, d_state=8, d_conv=3, expand=1, dt_rank="auto", deterministic=False,
                 save_block_states=False, **kwargs):
        super().__init__(**kwargs)
        self.deterministic = deterministic  # the scan's gradient bitwise reproducible on the GPU
        self.save_block_states = save_block_states  # training calls: selective_scan's option
        self.d_model = d_model
        self.d_state = d_state
        self.d_conv = d_conv
        self.expand = expand
        self.d_inner = int(expand * d_model)
        if self.d_inner % 2:
            raise ValueError(f"MambaVisionMixer: expand * d_model ({self.d_inner}) must be even")
        self.dt_rank = math.ceil(d_model / 16) if dt_rank == "auto" else dt_rank
        self.dt_rank_arg = dt_rank
        half = self.d_inner // 2
        self.supports_jit = False  # XLA cannot compile a custom op
        self.in_proj = keras.layers.Dense(self.d_inner, use_bias=False, name="in_proj")
        self.conv1d_x = keras.layers.DepthwiseConv1D(d_conv, padding="same", use_bias=False, name="conv1d_x")
        self.conv1d_z = keras.layers.DepthwiseConv1D(d_conv, padding="same", use_bias=False, name="conv1d_z")
        self.x_proj = keras.layers.Dense(self.dt_rank + 2 * d_state, use_bias=False, name="x_proj")
        std = self.dt_rank ** -0.5
        self.dt_proj = keras.layers.Dense(
            half, use_bias=True, name="dt_proj",
            kernel_initializer=keras.initializers.RandomUniform(-std, std),
            bias_initializer=_dt_bias_initializer())
        self.out_proj = keras.layers.Dense(d_model, use_bias=False, name="out_proj")

    def build(self, input_shape):
        half = self.d_inner // 2
        self.in_proj.build(input_shape)
        self.conv1d_x.build((None, None, half))
        self.conv1d_z.build((None, None, half))
        self.x_proj.build((None, half))
        self.dt_proj.build((None, self.dt_rank))
        self.out_proj.build((None, None, self.d_inner))
        a_log = np.log(np.tile(np.arange(1, self.d_state + 1, dtype=np.float32), (half, 1)))
        # The scan takes A and D in float32 whatever the compute dtype: no autocast.
        self.A_log = self.add_weight(shape=(half, self.d_state), name="A_log", dtype="float32",
                                     initializer=keras.initializers.Constant(a_log), autocast=False)
        self.D = self.add_weight(shape=(half,), name="D", dtype="float32", initializer="ones", autocast=False)

    def call(self, hidden_states, training=None):
        half = self.d_inner // 2
        xz = self.in_proj(hidden_states)                       # (b, L, d_inner)
        x, z = xz[..., :half], xz[..., half:]
        x = tf.nn.silu(self.conv1d_x(x))
        z = tf.nn.silu(self.conv1d_z(z))
        x_dbl = self.x_proj(x)                                  # (b, L, dt_rank + 2N)
        dt, B, C = tf.split(x_dbl, [self.dt_rank, self.d_state, self.d_state], axis=-1)
        dt = self.dt_proj(dt)                                   # bias applied once here...
        to_channels_first = lambda t: tf.transpose(t, [0, 2, 1])
        A = -tf.exp(tf.convert_to_tensor(self.A_log))
        y = selective_scan(
            to_channels_first(x), to_channels_first(dt), A,
            to_channels_first(B), to_channels_first(C),         # (b, N, L): one group
            D=tf.convert_to_tensor(self.D),
            delta_bias=tf.cast(self.dt_proj.bias, tf.float32),  # ...and once more here
            delta_softplus=True, deterministic=self.deterministic,
            save_block_states=self.save_block_states and _training_call(training))
        y = tf.concat([to_channels_first(y), z], axis=-1)       # (b, L, d_inner)
        return self.out_proj(y)

    def compute_output_shape(self, input_shape):
        return input_shape

    def load_torch_state_dict(self, state_dict, prefix=""):
        """Loads MambaVisionMixer weights from a PyTorch state dict (name -> array-like,
        e.g. tensor.numpy()); `prefix` is the module's path, e.g. "levels.2.blocks.0.mixer."."""
        def get(name):
            return np.asarray(state_dict[prefix + name], dtype=np.float32)
        if not self.built:
            self.build((None, None, self.d_model))
        self.in_proj.kernel.assign(get("in_proj.weight").T)
        self.x_proj.kernel.assign(get("x_proj.weight").T)
        self.dt_proj.kernel.assign(get("dt_proj.weight").T)
        self.dt_proj.bias.assign(get("dt_proj.bias"))
        self.out_proj.kernel.assign(get("out_proj.weight").T)
        # torch depthwise Conv1d (channels, 1, k) -> Keras DepthwiseConv1D (k, channels, 1)
        self.conv1d_x.kernel.assign(np.transpose(get("conv1d_x.weight"), (2, 0, 1)))
        self.conv1d_z.kernel.assign(np.transpose(get("conv1d_z.weight"), (2, 0, 1)))
        self.A_log.assign(get("A_log"))
        self.D.assign(get("D"))

    def get_config(self):
        return {**super().get_config(), "d_model": self.d_model, "d_state": self.d_state,
                "d_conv": self.d_conv, "expand": self.expand, "dt_rank": self.dt_rank_arg,
                "deterministic": self.deterministic, "save_block_states": self.save_block_states}
