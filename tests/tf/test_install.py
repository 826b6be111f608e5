"""test_install.py: what pip installs besides the package (the scanforge command), and the
messages a broken install or build gives."""
import importlib.metadata
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import pytest
import tensorflow as tf

from scanforge_tf import ops

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]


def _pip_installed():
    try:
        importlib.metadata.distribution("scanforge-tf")
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


# What pip puts beside the package (the command, its RUNPATH) exists only where pip installed
# it; the GPU machine's TensorFlow (docs/device.md) carries a copy of the package alone.
needs_pip_install = pytest.mark.skipif(not _pip_installed(), reason="scanforge_tf is not pip-installed here "
                                       "(a copied package, as on the GPU machine): nothing of pip's to check")


def _ldd(path):
    """What the loader resolves for path, as a program started without LD_LIBRARY_PATH sees
    it (that variable comes before any RUNPATH, by the loader's rules)."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    resolved = {}
    for line in subprocess.run(["ldd", path], capture_output=True, text=True, env=env).stdout.splitlines():
        name, _, where = line.strip().partition(" => ")
        resolved[name] = where.split(" (")[0]
    return resolved


@needs_pip_install
def test_pip_installs_the_scanforge_command():
    """A TensorFlow user can warm the kernel cache, tune and check without a source build."""
    command = os.path.join(sysconfig.get_path("scripts"), "scanforge")
    assert os.access(command, os.X_OK), f"{command} is missing"
    result = subprocess.run([command, "variants"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "op=bwd,split=" in result.stdout


def test_the_package_records_the_tensorflow_it_was_built_against():
    from scanforge_tf._build_info import TENSORFLOW_VERSION
    assert TENSORFLOW_VERSION == tf.__version__


def test_another_tensorflow_release_is_refused_before_loading():
    ops.check_tensorflow_version("2.21.0", "2.21.3")  # patch releases share the ABI
    with pytest.raises(ImportError, match=r"built against TensorFlow 2\.20\.1, but this Python runs "
                                          r"TensorFlow 2\.21\.0.*TensorFlow 2\.20\.\*"):
        ops.check_tensorflow_version("2.20.1", "2.21.0")


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to make the broken library")
def test_a_missing_library_is_named(tmp_path):
    """An op library whose dependency is gone: the message names that library, not a rebuild."""
    (tmp_path / "dep.c").write_text("int scanforge_test_dep(void) { return 1; }\n")
    (tmp_path / "op.c").write_text("int scanforge_test_dep(void);\nint f(void) { return scanforge_test_dep(); }\n")
    cc = lambda *args: subprocess.run(["cc", "-shared", "-fPIC", *args], cwd=tmp_path, check=True)
    cc("-o", "libscanforge_gone.so.1", "-Wl,-soname,libscanforge_gone.so.1", "dep.c")
    cc("-o", "op.so", "op.c", "-L.", "-l:libscanforge_gone.so.1")
    (tmp_path / "libscanforge_gone.so.1").unlink()
    with pytest.raises(ImportError, match=r"needs the shared library libscanforge_gone\.so\.1, "
                                          r"which is not installed") as raised:
        ops._load(str(tmp_path / "op.so"))
    assert "rebuild" not in str(raised.value)


def test_known_libraries_name_their_package():
    error = "liblua5.4.so.0: cannot open shared object file: No such file or directory"
    message = ops.load_failure_message("/x/_scanforge_ops.so", error, "2.21.0", "2.21.0")
    assert "liblua5.4.so.0" in message and "package liblua5.4-0" in message


def test_build_without_scikit_build_core_says_what_to_install():
    """pip install --no-build-isolation in a Python without scikit-build-core: the build
    backend's own message, not pip's 'cannot import the backend'. -S hides site-packages."""
    backend = REPOSITORY / "tf_binding" / "build_backend"
    result = subprocess.run([sys.executable, "-S", "-c", "import scanforge_build_backend"],
                            cwd=backend, capture_output=True, text=True, timeout=60,
                            env={"PATH": os.environ.get("PATH", "")})
    assert result.returncode != 0
    assert "pip install 'scikit-build-core>=0.10', then run again" in result.stderr, result.stderr


@pytest.mark.skipif(shutil.which("ldd") is None, reason="needs ldd")
def test_the_op_carries_the_libraries_it_links():
    """Lua, Jansson and xxHash sit next to the op and are what the loader picks (RPATH
    $ORIGIN), so the wheel loads where they are not installed."""
    package = pathlib.Path(ops._LIBRARY).parent
    resolved = _ldd(ops._LIBRARY)
    for soname in ("liblua5.4.so.0", "libjansson.so.4", "libxxhash.so.0"):
        assert (package / soname).is_file(), soname
        where = resolved.get(soname)
        assert where and pathlib.Path(where).resolve() == (package / soname).resolve(), (soname, where)


@needs_pip_install
@pytest.mark.skipif(shutil.which("ldd") is None, reason="needs ldd")
def test_the_scanforge_command_takes_the_libraries_from_the_package():
    """The command's RUNPATH leads from the scripts folder to the package: Jansson and xxHash
    resolve to the bundled copies, not to the system's."""
    command = os.path.join(sysconfig.get_path("scripts"), "scanforge")
    package = pathlib.Path(ops._LIBRARY).parent
    resolved = _ldd(command)
    for soname in ("libjansson.so.4", "libxxhash.so.0"):
        where = resolved.get(soname)
        assert where and pathlib.Path(where).resolve() == (package / soname).resolve(), (soname, where)
