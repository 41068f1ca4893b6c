// Under the emulator, <cuda_fp16.h> (included by kernels/cuda/common.cuh) is the emulator.
#pragma once
#include "../simt.h"
