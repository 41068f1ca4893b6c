#!/usr/bin/env python3
"""Write the tiny test BERT's weights as a PyTorch pickle (pytorch_model.bin), so the
embedder's .bin loading path is tested. Needs torch and safetensors (e.g. the .venv-bench made
by scripts/bench-st.sh):

  .venv-bench/bin/python scripts/gen-tiny-bert-pth.py

Reads crates/memdex-embed/tests/fixtures/tiny-bert/model.safetensors (from gen-tiny-bert.py)
and writes crates/memdex-embed/tests/fixtures/tiny-bert-pytorch_model.bin.
"""
import os

import torch
from safetensors.torch import load_file

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "memdex-embed", "tests", "fixtures")
state = load_file(os.path.join(here, "tiny-bert", "model.safetensors"))
torch.save({k: state[k] for k in sorted(state)}, os.path.join(here, "tiny-bert-pytorch_model.bin"))
print("wrote", os.path.join(here, "tiny-bert-pytorch_model.bin"))
