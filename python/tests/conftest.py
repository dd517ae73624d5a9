import os
import subprocess
import sys

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PYTHON_DIR = os.path.join(REPO, "python")
SUITE_DIR = os.path.join(REPO, "bench", "jaxbench")
TINY_WORKLOAD = os.path.join(HERE, "data", "tiny_workload.py")
REFERENCE = os.path.join(HERE, "data", "reference.py")

if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)


def maxkernel_bin():
    path = os.environ.get("MAXKERNEL_BIN", os.path.join(REPO, "build", "maxkernel"))
    return path if os.path.isabs(path) else os.path.join(REPO, path)


@pytest.fixture
def mk_bin():
    path = maxkernel_bin()
    if not os.access(path, os.X_OK):
        pytest.skip(f"no maxkernel binary at {path} (set MAXKERNEL_BIN)")
    return path


def run_bridge(*args, cwd=REPO):
    """python3 -m maxkernel_jax ARGS as a subprocess (for exit codes and messages)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "maxkernel_jax", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def run_mk(binary, *args, cwd=REPO, timeout=300):
    env = dict(os.environ)
    env["MAXKERNEL_PYTHON"] = sys.executable
    return subprocess.run([binary, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
