// Pooling for the oneDNN engine's channels-last int8 (u8) and bf16 routes, on CPUs with AVX-512.
// oneDNN 2.6's poolings of channels-last u8 and bf16 are slow (its stem max pool of 4 x 147 x 147
// x 64 bf16 values: 1.7 ms, of u8: 0.5 ms) and cannot write into a slice of a concatenation, so
// each such pooling also cost a copy; these kernels read and write channels-last tensors with any
// pixel stride (a slice: its first channel and the concatenation's channel count):
// - max_pool: the stem's and the reduction blocks' max pools, and Mixed_7c's max-pool branch;
//   u8 optionally requantized to the destination's step on the way (what oneDNN's reorder did
//   after its pooling): the same values as oneDNN's pooling and reorder for finite inputs (a
//   bf16 NaN is dropped from its window).
// - avg3x3_relu: the tf2015 pool branch after its 1x1 layer (the two commute over the valid
//   window, bias included): 3x3 stride-1 average over the valid window of f32 values, ReLU, then
//   u8 or bf16 into the block's concatenation; one rounding where the pool-first order rounded
//   twice (the pool's output and the layer's).
// - global_avg: the network's last pool, from u8 (exact integer sums) or bf16 straight into the
//   caller's floats (oneDNN's bf16 pooling rounded the features to bf16).
// Each kernel computes the output rows (or images) [first, last): the caller splits them over its
// threads; the results do not depend on the split. The kernels are built on x86 only (available()
// is false elsewhere); no oneDNN, LibTorch or OpenCV here.
#pragma once
#include <cstddef>
#include <cstdint>

namespace vecbench::pool_kernels {

/// The element type of a pooled activation.
enum class Type { u8, bf16 };

/// True when this CPU runs the kernels for `t`: AVX-512F/BW/VL (u8), and AVX512_BF16 too (bf16).
bool available(Type t);

/// A channels-last activation: channel ch of pixel (y, x) of image i at
/// data[((i * h + y) * w + x) * pixel_stride + ch], in elements of its type; pixel_stride >= c.
struct Tensor {
  void* data = nullptr;
  int n = 0, h = 0, w = 0, c = 0;
  std::ptrdiff_t pixel_stride = 0;
};

/// Output size along one axis: `in` pixels, a window of `k`, `stride`, `pad` on each side.
inline int out_dim(int in, int k, int stride, int pad) { return (in + 2 * pad - k) / stride + 1; }

/// k x k max pool of `src` (u8 or bf16) with `stride` and `pad` (padded positions are outside the
/// window) into `dst` (the same type; dst.h and dst.w the output's size). u8 with `rescale` != 1
/// (> 0): each maximum v is written as round_even(min(v * rescale, 255)), a requantization to
/// dst's step. bf16: NaNs are left out of the maximum.
/// Output rows [first, last) of src.n * dst.h.
void max_pool(Type t, const Tensor& src, const Tensor& dst, int k, int stride, int pad, float rescale, int first,
              int last);

/// 3x3 stride-1 average over the valid window (padding 1, not counted) of f32 `src`, then
/// max(v, 0) (a NaN gives 0), into `dst` of type `out`: u8 = saturate(round_even(v * inv_scale)),
/// bf16 = v rounded to nearest even. Each sum adds the window's rows top to bottom, each left to
/// right. Output rows [first, last) of src.n * src.h.
void avg3x3_relu(const Tensor& src, Type out, float inv_scale, const Tensor& dst, int first, int last);

/// dst[i * c + ch] = (the sum of channel ch over image i's h * w pixels of `src`, u8 or bf16) *
/// (scale / (h * w)), in float: u8 sums are exact integers, bf16 ones add the pixels in order.
/// Images [first, last).
void global_avg(Type t, const Tensor& src, float scale, float* dst, int first, int last);

/// Whether max_pool (or avg3x3_relu: k 3, stride 1, pad 1, src f32) takes these: available(t),
/// the same n and c on both sides with c a multiple of 16, pixel strides >= c, pad < k, and dst's
/// size the pooling's (data pointers aside). Each kernel checks this, and non-null data, and throws
/// std::invalid_argument where it fails.
bool fits(Type t, const Tensor& src, const Tensor& dst, int k, int stride, int pad);

}  // namespace vecbench::pool_kernels
