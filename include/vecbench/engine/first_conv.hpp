// Inception-v3's first layer (Conv2d_1a_3x3: 3 -> 32 channels, 3x3, stride 2, no padding, bias,
// ReLU) for the oneDNN engine's int8 and bf16 routes, on CPUs with AVX-512: from the caller's
// NCHW floats straight to the next layer's channels-last u8 (scaled, rounded to nearest even and
// saturated, as oneDNN's reorder does) or bf16 (rounded to nearest even). oneDNN 2.6 runs this
// layer only in f32 (3 input channels: no int8 or bf16 kernel but its reference code), into its
// blocked layout, and the route then reorders 11 MB of floats per 4 images to u8/bf16; the kernel
// is 1.7x the two (int8 model 1.04x, whole job 1.03x: results/int8/first-layer-20261203.md).
//
// Each output is bias + the 27 products in the order channel, kernel row, kernel column, each a
// fused multiply-add in float, then the ReLU as oneDNN's (max(v, 0): a NaN gives 0, as in the
// layer it replaces): the same bits at any batch size, thread count or row split.
// Single-threaded: the caller splits the rows (run's [first, last)) over its threads. No oneDNN,
// LibTorch or OpenCV here; the kernels are built on x86 only (available() is false elsewhere).
#pragma once
#include <cstddef>
#include <cstdint>

namespace vecbench::first_conv {

/// Output channels the kernel computes (two AVX-512 vectors).
constexpr int kOutChannels = 32;
/// Taps per output channel: 3 input channels x 3 x 3.
constexpr int kTaps = 27;

/// What it writes: channels-last u8 (int8 route) or bf16 (bf16 route), 32 channels a pixel.
enum class Output { u8, bf16 };

/// True when this CPU runs the kernel for `out`: AVX-512F (u8), AVX-512F and AVX512_BF16 (bf16).
bool available(Output out);

/// The layer's weights and bias as the kernel reads them: tap t = c*9 + ky*3 + kx, output channel o
/// at w[t*32 + o], from OIHW floats (32 x 3 x 3 x 3).
struct Filter {
  alignas(64) float w[kTaps * kOutChannels];
  alignas(64) float bias[kOutChannels];
};
Filter make_filter(const float* oihw, const float* bias);

/// Output size along one axis for an input of `in` pixels (3x3, stride 2, no padding).
inline int out_dim(int in) { return (in - 3) / 2 + 1; }

/// Computes output rows [first, last) of images 0..n-1, row r being image r / out_h, row r % out_h:
/// out[((n*out_h + y)*out_w + x)*32 + o] = q(relu(bias[o] + sum of w * in)), q: u8 =
/// saturate(round_even(v * inv_scale)), bf16 = round_even(v). `in`: n x 3 x in_h x in_w floats
/// (NCHW); in_w must give an output at least 8 wide. std::logic_error where available(out) is false.
void run(const Filter& f, const float* in, int in_h, int in_w, Output out, float inv_scale, void* dst, int first,
         int last);

}  // namespace vecbench::first_conv
