#!/usr/bin/env bash
# The TensorFlow part of the tests (CPU): installs the tensorflow wheel and scanforge_tf with pip,
# which builds the op library with CMake against that TensorFlow, then runs pytest on tests/tf.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 TF_CPP_MIN_LOG_LEVEL=2
bash scripts/install-deps.sh
# pip skips what is already there; tensorflow is the GPU-capable wheel users run.
"$python" -m pip install --quiet "tensorflow>=2.16,<3" "scikit-build-core>=0.10" pytest numpy
# --no-build-isolation: the op must be compiled against the very TensorFlow that loads it.
# The CUDA toolkit is hidden from CMake: a CPU-only install must build with the CUDA headers
# TensorFlow ships (cmake/cuda_headers.cmake).
"$python" -m pip install --quiet --no-build-isolation --force-reinstall --no-deps \
  --config-settings=cmake.define.CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON .
"$python" -c "import tensorflow as tf, scanforge_tf; print('scanforge_tf', scanforge_tf.__version__, 'on TensorFlow', tf.__version__)"
# Run from tests/tf so the installed package, not the source tree, is what gets imported.
# pytest's scratch directories go in one of our own, removed afterwards: a test run
# leaves /tmp as it found it.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/scanforge_tf_tests.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cd tests/tf
"$python" -m pytest -q -p no:cacheprovider --basetemp="$scratch/pytest" .
