#!/usr/bin/env bash
# tests/tf on the GPU machine (docs/device.md). There, TensorFlow comes from the parts
# ../shared/tools/tf-gpu-pack made (sent by the earlier calls of one warm machine) and
# pytest from wheels carried beside them, since the machine has no package index:
#   here:   python3 -m pip download --no-deps -d .tf-gpu/pytest_whl pytest pluggy iniconfig packaging
#   device: carry .tf-gpu/pN (the last part), .tf-gpu/rest and .tf-gpu/pytest_whl, then
#           bash bench/tf_gpu_tests.sh
# The pytest output goes to $OUT/tf_gpu.txt; its summary is printed last.
set -u
source .tf-gpu/rest/setup.sh || exit 1
python3 -m pip install -q --no-index --no-deps --target /tmp/pytest-site .tf-gpu/pytest_whl/*.whl || exit 1
export PYTHONPATH=/tmp/pytest-site:$PYTHONPATH
nvidia-smi --query-gpu=name --format=csv,noheader
out=${OUT:-/tmp}/tf_gpu.txt
(cd tests/tf && python3 -m pytest -q -p no:cacheprovider -rs . > "$out" 2>&1)
status=$?
tail -12 "$out"
exit $status
