"""Smoke check of the environment the llama-cpp-python wheel is built in."""
import scikit_build_core
import cmake  # noqa: F401
import ninja  # noqa: F401

print("scikit-build-core", scikit_build_core.__version__)
