#!/usr/bin/env bash
# The scanforge_tf wheel on a machine without Lua, Jansson and xxHash: builds it with the
# command tf_binding/README.md gives, installs it into a fresh venv, and runs the README's
# TensorFlow example and the installed `scanforge` command with the system's copies of
# those libraries hidden from the loader (a private mount namespace, each library file
# covered by an empty one). TensorFlow comes from the system Python (--system-site-packages).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
hidden_libraries=(liblua5.4.so.0 libjansson.so.4 libxxhash.so.0)

# Inside the namespace: hide the libraries, show that they are hidden, then run the wheel.
if [[ ${1:-} == --inside-namespace ]]; then
  scratch=$2
  : >"$scratch/empty"
  for soname in "${hidden_libraries[@]}"; do
    # Every copy the loader's cache knows, under the file name its symlinks lead to.
    for path in $(ldconfig -p | awk -v name="$soname" '$1 == name { print $NF }'); do
      mount --bind "$scratch/empty" "$(realpath "$path")"
    done
    if "$python" -c "import ctypes; ctypes.CDLL('$soname')" 2>/dev/null; then
      echo "test-wheel: $soname still loads inside the namespace: the test would prove nothing" >&2
      exit 1
    fi
    echo "test-wheel: $soname is hidden (a plain dlopen of it fails)"
  done
  cd "$scratch" # not the source tree: the installed package is what gets imported
  venv=$scratch/venv
  "$venv/bin/python" "$scratch/readme_example.py"
  "$venv/bin/scanforge" --version
  "$venv/bin/scanforge" variants >"$scratch/variants.txt"
  head "$scratch/variants.txt"
  grep -q "op=bwd,split=" "$scratch/variants.txt" || { echo "test-wheel: scanforge variants printed no backward variant" >&2; exit 1; }
  exit 0
fi

export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 TF_CPP_MIN_LOG_LEVEL=2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/scanforge_wheel.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# The documented command; build-dir puts a fresh build in the scratch folder instead of
# reusing build-tf-wheel/.
"$python" -m pip wheel --quiet --no-build-isolation --no-deps -w "$scratch/dist" \
  --config-settings=build-dir="$scratch/build" .
wheels=("$scratch"/dist/scanforge_tf-*.whl)
echo "test-wheel: built ${wheels[0]##*/}"
"$python" -m venv --system-site-packages "$scratch/venv"
# --ignore-installed: a scanforge_tf in the system's site-packages must not stand in for it.
"$scratch/venv/bin/python" -m pip install --quiet --no-deps --ignore-installed "${wheels[0]}"

# The README's TensorFlow example, checked against the shapes its comments announce.
"$python" - README.md "$scratch/readme_example.py" <<'EOF'
import re, sys
readme, out = sys.argv[1], sys.argv[2]
blocks = [b for b in re.findall(r"```python\n(.*?)```", open(readme).read(), re.S) if "import tensorflow as tf, scanforge_tf" in b]
if not blocks:
    sys.exit("test-wheel: README.md has no python block importing scanforge_tf")
expected = [line.split("#", 1)[1].strip() for line in blocks[0].splitlines()
            if line.startswith("print(") and "#" in line]
check = f"""
import contextlib, io, os, sys
import scanforge_tf
assert scanforge_tf.__file__.startswith(sys.prefix + os.sep), f"scanforge_tf came from {{scanforge_tf.__file__}}, not the venv"
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    exec(compile({blocks[0]!r}, "README.md", "exec"))
print(printed.getvalue(), end="")
lines = printed.getvalue().splitlines()
expected = {expected!r}
assert lines == expected, f"the README example printed {{lines}}, the README says {{expected}}"
print("test-wheel: the README example printed what the README says")
"""
open(out, "w").write(check)
EOF

if unshare --mount true 2>/dev/null; then
  unshare --mount env PYTHON="$python" bash "$0" --inside-namespace "$scratch"
else
  # No mount namespace here: check instead that the loader resolves the three libraries to
  # the package, for the op and for the command, and run them as they are.
  echo "test-wheel: unshare --mount is not permitted here; checking with ldd instead of hiding the libraries"
  package=$("$scratch/venv/bin/python" -c "import os, scanforge_tf; print(os.path.dirname(scanforge_tf.__file__))")
  # The command links Lua statically: it is checked for the other two.
  for pair in "$package/_scanforge_ops.so:${hidden_libraries[*]}" \
              "$scratch/venv/bin/scanforge:libjansson.so.4 libxxhash.so.0"; do
    binary=${pair%%:*}
    for soname in ${pair#*:}; do
      where=$(ldd "$binary" | awk -v name="$soname" '$1 == name { print $3 }')
      [[ -n $where && $(realpath "$where") == "$(realpath "$package/$soname")" ]] ||
        { echo "test-wheel: $binary takes $soname from '$where', not from the package" >&2; exit 1; }
    done
  done
  (cd "$scratch" && "$scratch/venv/bin/python" readme_example.py && "$scratch/venv/bin/scanforge" --version)
fi
echo "test-wheel: passed"
