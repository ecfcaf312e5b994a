// The CUDA resize: one thread per output pixel, each running resize_pixel_to_chw (the very
// function tests/core/test_resize_formula.cpp checks against resize_rgb_to_chw on the host).
#include <cuda_runtime.h>

#include <string>

#include "vecbench/core/base/error.hpp"
#include "vecbench/input/resize_formula.hpp"
#include "vecbench/input/resize_kernel.hpp"

namespace vecbench {
namespace {

__global__ void resize_rgb_to_chw_kernel(const std::uint8_t* src, int h, int w, std::size_t row_pitch, int out,
                                         ResizeMode mode, float* dst) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= out || y >= out) return;
  resize_pixel_to_chw(src, h, w, row_pitch, out, mode, x, y, dst);
}

}  // namespace

void launch_resize_rgb_to_chw(const std::uint8_t* src, int h, int w, std::size_t row_pitch, int out, ResizeMode mode,
                              float* dst, void* stream) {
  if (h <= 0 || w <= 0 || out <= 0 || src == nullptr || dst == nullptr || row_pitch < 3u * static_cast<std::size_t>(w))
    throw Error("resize kernel: invalid image (" + std::to_string(w) + "x" + std::to_string(h) + ", pitch " +
                std::to_string(row_pitch) + ") or output size " + std::to_string(out));
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((out + 31) / 32), static_cast<unsigned>((out + 7) / 8));
  resize_rgb_to_chw_kernel<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(src, h, w, row_pitch, out, mode, dst);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(std::string("resize kernel: launch failed: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

}  // namespace vecbench
