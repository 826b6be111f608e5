"""scanforge_tf: Mamba's selective scan as a TensorFlow op (CPU and GPU), its gradient, Keras layers.

Importing the package loads the op library and registers the gradient, which is also what
a reloaded SavedModel that uses the op needs.
"""
from scanforge_tf.ops import selective_scan
from scanforge_tf import layers

__all__ = ["selective_scan", "layers"]
__version__ = "0.1.0"
