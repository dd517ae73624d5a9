#!/usr/bin/env bash
# Installs everything maxkernel needs on a fresh Debian 12 machine (idempotent: a second run only
# checks). Debian packages for the C++ build and tests; PyPI packages for the JAX bridge.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(
  build-essential cmake ninja-build ccache g++ clang libclang-rt-14-dev
  nlohmann-json3-dev libcli11-dev libssl-dev libfmt-dev libspdlog-dev libsqlite3-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev
  libxgboost-dev  # the search's cost model
  pkg-config libcpp-httplib-dev libsodium-dev  # `maxkernel serve`: HTTP, argon2id and random values
  chromium chromium-driver python3-selenium  # the web UI's browser test (tests/browser)
  libdnnl-dev libopenblas-dev  # linked only into maxkernel-baselines (maxkernel bench)
  prometheus  # promtool, for the tests that check the metrics textfiles
  python3 python3-pip
)

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: Debian packages present"
fi

PYTHON="${PYTHON:-python3}"
PIP_FLAGS=(-q --disable-pip-version-check)
# Debian's own python3 refuses system-wide pip installs (PEP 668); pyenv/venv pythons do not.
if "$PYTHON" -c 'import sys; sys.exit(0 if sys.prefix == sys.base_prefix else 1)' &&
   ls "$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')"/EXTERNALLY-MANAGED >/dev/null 2>&1; then
  PIP_FLAGS+=(--break-system-packages)
fi
if ! "$PYTHON" -c 'import jax, numpy, ml_dtypes, yaml, pytest' 2>/dev/null; then
  echo "setup: installing PyPI packages (jax[cpu], numpy, ml_dtypes, pyyaml, pytest)"
  "$PYTHON" -m pip install "${PIP_FLAGS[@]}" "jax[cpu]" numpy ml_dtypes pyyaml pytest
fi
if [ -f python/pyproject.toml ] && ! "$PYTHON" -c 'import maxkernel_jax' 2>/dev/null; then
  echo "setup: installing the maxkernel_jax bridge (editable)"
  "$PYTHON" -m pip install "${PIP_FLAGS[@]}" --no-deps -e python/
fi
# libtpu: XLA:TPU and Mosaic, used compile-only (no TPU is attached; docs/TPU.md). The version is
# the one the installed jax's `tpu` extra pins, read from jax's own metadata; every bridge call
# runs with JAX_PLATFORMS=cpu so that jax does not probe for TPUs it would not find.
TPU_SETUP=python/maxkernel_jax/tpu_setup.py
if libtpu_state=$("$PYTHON" "$TPU_SETUP" --check); then
  echo "setup: $libtpu_state"
elif libtpu_req=$("$PYTHON" "$TPU_SETUP" --requirement); then
  echo "setup: $libtpu_state; installing $libtpu_req (about 140 MB)"
  "$PYTHON" -m pip install "${PIP_FLAGS[@]}" --no-deps "$libtpu_req"
  "$PYTHON" "$TPU_SETUP" --check >/dev/null || {
    echo "setup: $libtpu_req installed but still not usable: $("$PYTHON" "$TPU_SETUP" --check)" >&2
    exit 1
  }
else
  echo "setup: skipping libtpu ($libtpu_state); TPU targets will compile nothing" >&2
fi
echo "setup: done"
