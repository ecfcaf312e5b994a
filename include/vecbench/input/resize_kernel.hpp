// The CUDA resize kernel's launcher (src/input/resize_kernel.cu, built with nvJPEG only): no CUDA
// types here, so that host code compiles without CUDA headers.
#pragma once
#include <cstddef>
#include <cstdint>

#include "vecbench/input/resize_formula.hpp"

namespace vecbench {

/// Enqueues on `stream` (a cudaStream_t; nullptr: the legacy default stream) the resize of the
/// interleaved RGB uint8 device image `src` (h x w, `row_pitch` bytes per row) to out x out,
/// written planar (CHW) as float 0..255 into the device floats `dst` (3*out*out): one thread per
/// output pixel, each computing resize_pixel_to_chw, so the floats equal resize_rgb_to_chw's.
/// Throws Error when the launch fails (invalid arguments, or the device's error).
void launch_resize_rgb_to_chw(const std::uint8_t* src, int h, int w, std::size_t row_pitch, int out, ResizeMode mode,
                              float* dst, void* stream);

}  // namespace vecbench
