# Sourced by the scripts that run ON the GPU box (gpu-check.sh, gpu-extract.sh): puts the CUDA
# user-space libraries PyTorch ships (the sonames memdex's CUDA build links against) first on
# LD_LIBRARY_PATH. CU13 names their folder ("" when none was found). Uses $PY (python3).
CU13=$("${PY:-python3}" - <<'PY' 2>/dev/null
import os, glob, importlib.util
spec = importlib.util.find_spec("nvidia")
paths = [os.path.join(p, "cu13", "lib") for p in (spec.submodule_search_locations or [])] if spec else []
import torch
paths.append(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cu13", "lib"))
print(next((os.path.realpath(p) for p in paths if glob.glob(os.path.join(p, "libcublas.so*"))), ""))
PY
)
export LD_LIBRARY_PATH=${CU13:+$CU13:}${LD_LIBRARY_PATH:-}
