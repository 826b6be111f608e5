"""scanforge_build_backend.py: pyproject.toml's build backend: scikit-build-core, after a check
that what the build needs is in this Python.

`pip install --no-build-isolation .` builds in the running Python and installs nothing
from [build-system] requires; without scikit-build-core pip would only say it cannot
import the backend, and without TensorFlow CMake would fail deep in its log. This says
what to install instead.
"""
import importlib.util

_HOW = "then run again: pip install --no-build-isolation ."

if importlib.util.find_spec("scikit_build_core") is None:
    raise ImportError(
        "scanforge-tf builds with scikit-build-core, which this Python lacks (a build with "
        f"--no-build-isolation does not install it): pip install 'scikit-build-core>=0.10', {_HOW}")
if importlib.util.find_spec("tensorflow") is None:
    raise ImportError(
        "scanforge-tf compiles its op against the TensorFlow of the Python that builds it, and "
        f"this Python has none: pip install tensorflow, {_HOW}")

from scikit_build_core.build import *  # noqa: E402,F401,F403  (the PEP 517 hooks)
from scikit_build_core.build import __all__  # noqa: E402,F401
