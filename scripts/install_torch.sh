#!/bin/sh
# Install torch into a virtualenv, the right build for this machine, unless it has one.
#
#   scripts/install_torch.sh VENV_BIN TORCH_SPEC
#
# - The venv already imports torch (a CUDA build on a GPU box, one the user chose): kept.
# - An NVIDIA GPU is present (nvidia-smi lists one): the default index, whose Linux x86_64
#   wheels are CUDA builds.
# - Otherwise the CPU build, from PyTorch's CPU wheel index: on Linux the default index would
#   download the multi-GB CUDA build, which a machine without a GPU cannot use. If that index
#   cannot be reached (offline, a proxy, a mirror-only network), fall back to the default
#   index at once: a short timeout and no retries, never minutes of waiting.
set -u
bin=$1
spec=$2
cpu_index=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}

if "$bin/python" -c "import torch" 2>/dev/null; then
    echo "install_torch: torch is already installed in $bin: kept as it is"
    exit 0
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; then
    echo "install_torch: NVIDIA GPU found: $spec from the default index"
    exec "$bin/pip" install --quiet "$spec"
fi
echo "install_torch: no NVIDIA GPU: the CPU build of $spec from $cpu_index"
if "$bin/pip" install --quiet --timeout 5 --retries 0 --index-url "$cpu_index" "$spec"; then
    exit 0
fi
echo "install_torch: $cpu_index could not be used: $spec from the default index instead" >&2
exec "$bin/pip" install --quiet "$spec"
