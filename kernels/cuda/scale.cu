// Plumbing check for the PTX build: y[i] = a * x[i].
extern "C" __global__ void memdex_scale_f32(const float* __restrict__ x, float* __restrict__ y,
                                            float a, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
