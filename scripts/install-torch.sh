#!/usr/bin/env bash
# Install torch into the given python's environment without ever pulling a multi-GB CUDA build
# by accident:
#   1. torch already importable -> nothing to do (a user's own build, CUDA or not, is kept);
#   2. a torch wheel of TORCH_VERSION available from pip's configured --find-links (no index)
#      -> install it (seconds; the lab machines keep a CPU build there), then its dependencies;
#   3. otherwise a normal `pip install torch` (whatever the platform's default build is).
set -euo pipefail
PY=${1:-python3}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
if "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "install-torch: torch $("$PY" -c 'import torch; print(torch.__version__)') already installed"
  exit 0
fi
if "$PY" -m pip install -q --no-index --no-deps "torch==${TORCH_VERSION}" >/dev/null 2>&1; then
  echo "install-torch: installed torch ${TORCH_VERSION} from a local wheel"
  "$PY" -m pip install -q "torch==${TORCH_VERSION}"   # its pure-python dependencies
else
  echo "install-torch: no local torch ${TORCH_VERSION} wheel; installing torch from the index"
  "$PY" -m pip install -q torch
fi
