"""test_install.py: what pip installs besides the package: the scanforge command."""
import os
import subprocess
import sysconfig


def test_pip_installs_the_scanforge_command():
    """A TensorFlow user can warm the kernel cache, tune and check without a source build."""
    command = os.path.join(sysconfig.get_path("scripts"), "scanforge")
    assert os.access(command, os.X_OK), f"{command} is missing"
    result = subprocess.run([command, "variants"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "op=bwd,split=" in result.stdout
