// A CUDA shim for `g++ -std=c++17 -fsyntax-only -include cuda_shim.h`: just enough of what NVRTC
// builds in for cubelab's generated CUDA C++ to be checked for syntax and C++ types.
//
// What it checks: every generated kernel parses, every value's type matches where it is used
// (min/max take one integer type, the f-suffixed float functions take float: no silent
// promotion to double), pointers keep their constness (storing through a `T const*` fails),
// atomics and warp shuffles get the types CUDA declares them for, and the source needs no header
// (the generated text has no #include: NVRTC has none of the host's).
// What it cannot check: CUDA semantics — whether a shuffle's mask names the right lanes, memory
// ordering, launch bounds. The real compiler does that: NVRTC in the CUDA runtime, and `nvcc`
// where a machine has it (tests/test_cuda.py uses it when present).
#pragma once

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(n)
#define __align__(n) alignas(n)

struct cubelab_uint3 { unsigned int x, y, z; };
extern const cubelab_uint3 threadIdx, blockIdx, blockDim, gridDim;
extern const int warpSize;

void __syncthreads();

// -- math: float in, float out --------------------------------------------------------------
#define CUBELAB_SHIM_F1(name) float name(float x);
CUBELAB_SHIM_F1(sqrtf) CUBELAB_SHIM_F1(rsqrtf) CUBELAB_SHIM_F1(expf) CUBELAB_SHIM_F1(logf)
CUBELAB_SHIM_F1(sinf) CUBELAB_SHIM_F1(cosf) CUBELAB_SHIM_F1(tanf) CUBELAB_SHIM_F1(tanhf)
CUBELAB_SHIM_F1(sinhf) CUBELAB_SHIM_F1(coshf) CUBELAB_SHIM_F1(asinf) CUBELAB_SHIM_F1(acosf)
CUBELAB_SHIM_F1(atanf) CUBELAB_SHIM_F1(asinhf) CUBELAB_SHIM_F1(acoshf) CUBELAB_SHIM_F1(atanhf)
CUBELAB_SHIM_F1(floorf) CUBELAB_SHIM_F1(ceilf) CUBELAB_SHIM_F1(rintf) CUBELAB_SHIM_F1(truncf)
CUBELAB_SHIM_F1(fabsf)
#undef CUBELAB_SHIM_F1
float powf(float x, float y);
float atan2f(float y, float x);
float fmodf(float x, float y);
float fminf(float a, float b);
float fmaxf(float a, float b);
float fmaf(float a, float b, float c);
bool isnan(float x);
bool isinf(float x);
int abs(int x);
int min(int a, int b);
unsigned int min(unsigned int a, unsigned int b);
int max(int a, int b);
unsigned int max(unsigned int a, unsigned int b);

// -- bits and conversions -------------------------------------------------------------------
int __popc(unsigned int x);
unsigned int __brev(unsigned int x);
int __clz(int x);
int __ffs(int x);
int __float2int_rz(float x);
unsigned int __float2uint_rz(float x);
unsigned int __float_as_uint(float x);
int __float_as_int(float x);
float __uint_as_float(unsigned int x);
float __int_as_float(int x);

// -- atomics: int and unsigned int, as CUDA declares them ------------------------------------
#define CUBELAB_SHIM_ATOMIC(name) \
    int name(int* address, int value); unsigned int name(unsigned int* address, unsigned int value);
CUBELAB_SHIM_ATOMIC(atomicAdd) CUBELAB_SHIM_ATOMIC(atomicSub) CUBELAB_SHIM_ATOMIC(atomicMin)
CUBELAB_SHIM_ATOMIC(atomicMax) CUBELAB_SHIM_ATOMIC(atomicAnd) CUBELAB_SHIM_ATOMIC(atomicOr)
CUBELAB_SHIM_ATOMIC(atomicXor) CUBELAB_SHIM_ATOMIC(atomicExch)
#undef CUBELAB_SHIM_ATOMIC
int atomicCAS(int* address, int compare, int value);
unsigned int atomicCAS(unsigned int* address, unsigned int compare, unsigned int value);

// -- warp (plane) intrinsics: the types CUDA overloads them for ------------------------------
unsigned int __activemask();
int __all_sync(unsigned int mask, int predicate);
int __any_sync(unsigned int mask, int predicate);
unsigned int __ballot_sync(unsigned int mask, int predicate);
#define CUBELAB_SHIM_SHFL(name, lane) \
    int name(unsigned int mask, int var, lane, int width = 32); \
    unsigned int name(unsigned int mask, unsigned int var, lane, int width = 32); \
    float name(unsigned int mask, float var, lane, int width = 32);
CUBELAB_SHIM_SHFL(__shfl_sync, int srcLane) CUBELAB_SHIM_SHFL(__shfl_xor_sync, int laneMask)
CUBELAB_SHIM_SHFL(__shfl_up_sync, unsigned int delta)
CUBELAB_SHIM_SHFL(__shfl_down_sync, unsigned int delta)
#undef CUBELAB_SHIM_SHFL
