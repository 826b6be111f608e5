"""test_cache_warnings.py: the op logs the kernel cache's warnings (a skipped read-only layer,
a cache gone memory-only) through TensorFlow's log, each once per process."""
import os
import subprocess
import sys
import textwrap

# Three calls of the op in a fresh process (the warnings are per process), on the CPU.
SCRIPT = textwrap.dedent("""
    import tensorflow as tf, scanforge_tf
    u, A, B = tf.ones([1, 2, 3]), -tf.ones([2, 4]), tf.ones([1, 4, 3])
    for _ in range(3):
        scanforge_tf.selective_scan(u, u, A, B, B)
    print("ran")
""")


def run_op(tmp_path, **changes):
    """Runs SCRIPT with the environment's cache settings replaced by `changes`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SCANFORGE_CACHE")}
    env.update(TF_CPP_MIN_LOG_LEVEL="0", CUDA_VISIBLE_DEVICES="",
               SCANFORGE_CACHE_DIR=str(tmp_path / "cache"))
    env.update(changes)
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and "ran" in done.stdout, done.stderr
    return done.stderr


def test_skipped_layer_logged_once(tmp_path):
    missing = tmp_path / "no-such-layer"
    log = run_op(tmp_path, SCANFORGE_CACHE_PATH=str(missing))
    lines = [line for line in log.splitlines() if "skipping read-only layer" in line]
    assert len(lines) == 1, log
    assert str(missing) in lines[0] and "does not exist" in lines[0]


def test_memory_only_fallback_logged_once(tmp_path):
    (tmp_path / "a_file").write_text("not a directory")
    log = run_op(tmp_path, SCANFORGE_CACHE_DIR=str(tmp_path / "a_file" / "cache"),
                 SCANFORGE_CACHE_PATH="")
    lines = [line for line in log.splitlines() if "memory only" in line]
    assert len(lines) == 1, log
    assert "scanforge: kernel cache: cannot create" in lines[0]


def test_nothing_logged_when_all_is_well(tmp_path):
    log = run_op(tmp_path, SCANFORGE_CACHE_PATH="")
    assert "scanforge: kernel cache" not in log, log
