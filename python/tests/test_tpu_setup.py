"""The libtpu pin scripts/setup.sh installs: read from jax's metadata, matched by version."""

import builtins
import os
import subprocess
import sys

import pytest

from maxkernel_jax import tpu_setup

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "maxkernel_jax", "tpu_setup.py")

# jax 0.10.2's own Requires-Dist lines (importlib.metadata.requires("jax")), abridged.
JAX_0_10_2 = [
    "jaxlib<=0.10.2,>=0.10.2",
    "ml_dtypes>=0.5.0",
    'jaxlib<=0.10.2,>=0.10.2; extra == "tpu"',
    'libtpu==0.0.42.*; extra == "tpu"',
    'requests; extra == "tpu"',
    'jax-cuda12-plugin[with-cuda]<=0.10.2,>=0.10.2; extra == "cuda"',
]


def test_requirement_is_the_tpu_extras_libtpu_pin():
    assert tpu_setup.libtpu_requirement(JAX_0_10_2) == "libtpu==0.0.42.*"


def test_requirement_ignores_other_extras_and_lookalike_names():
    assert tpu_setup.libtpu_requirement(['libtpu==9.9; extra == "cuda"']) is None
    assert tpu_setup.libtpu_requirement(['libtpu-nightly==0.1.dev1; extra == "tpu"']) is None
    assert tpu_setup.libtpu_requirement(["libtpu==9.9"]) is None  # not under the tpu extra
    assert tpu_setup.libtpu_requirement(["libtpu >= 0.0.40, < 0.1 ; extra == 'tpu'"]) == \
        "libtpu>=0.0.40,<0.1"


def test_requirement_of_the_installed_jax_names_libtpu():
    pytest.importorskip("jax")
    req = tpu_setup.libtpu_requirement()
    assert req is not None and req.startswith("libtpu"), req


@pytest.mark.parametrize("forbid_packaging", [False, True])
def test_version_matching(monkeypatch, forbid_packaging):
    if forbid_packaging:  # the fallback used where `packaging` is not installed
        real_import = builtins.__import__

        def no_packaging(name, *args, **kwargs):
            if name.startswith("packaging"):
                raise ImportError(name)
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", no_packaging)
    m = tpu_setup.version_matches
    assert m("libtpu==0.0.42.*", "0.0.42")
    assert m("libtpu==0.0.42.*", "0.0.42.1")
    assert not m("libtpu==0.0.42.*", "0.0.421")
    assert not m("libtpu==0.0.42.*", "0.0.41.9")
    assert not m("libtpu==0.0.42.*", "0.0.43")
    assert m("libtpu==0.0.42", "0.0.42")
    assert not m("libtpu==0.0.42", "0.0.42.1")
    assert m("libtpu>=0.0.40,<0.1", "0.0.42.1")
    assert not m("libtpu>=0.0.40,<0.1", "0.1.0")
    assert m("libtpu", "1.2.3")


def test_script_requirement_and_check_exit_codes():
    pytest.importorskip("jax")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    req = subprocess.run([sys.executable, SCRIPT, "--requirement"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert req.returncode == 0, req.stderr
    assert req.stdout.strip() == tpu_setup.libtpu_requirement()
    check = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True,
                           env=env, timeout=60)
    ok, message = tpu_setup.libtpu_status()
    assert check.returncode == (0 if ok else 1)
    assert check.stdout.strip() == message
    bad = subprocess.run([sys.executable, SCRIPT, "--install-everything"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "usage" in bad.stderr
