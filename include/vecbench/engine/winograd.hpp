// Winograd F(4x4, 3x3) convolutions for CPUs with AVX2 and FMA (8-channel blocks) or AVX-512
// (16-channel blocks). oneDNN 2.x has no Winograd in its AVX2 code, and on AVX-512 its Winograd
// takes only layers of 64 or more input channels, one image at a time (its rounding otherwise
// depends on the batch): the oneDNN engine runs 3x3 stride-1 layers with these
// (src/engine/onednn_inception.cpp; results/PERFORMANCE.md, "Winograd on AVX2";
// results/kernels/winograd-avx512-*.md).
//
// Each 4x4 output tile is computed from a 6x6 input tile with 36 products per channel pair
// instead of 144: the input tiles are transformed (B^T d B), multiplied by the transformed filters
// (U = G g G^T, computed once in double precision) as 36 matrix products over channels, and
// transformed back (A^T m A), with the bias and ReLU applied on the way out. Activations are in
// oneDNN's channel-blocked layouts (nChw8c with AVX2, nChw16c with AVX-512), so one register
// holds one pixel's block of channels; the destination may be a slice of a larger tensor (a
// concatenation's channels). Each output depends on its own tile only, summed in a fixed order:
// the same bits at any batch size.
//
// Single-threaded by design: the caller splits the work into units (blocks of tiles, each in
// channel groups: run_units) and runs them on as many threads as it likes, each with its own
// scratch (scratch_floats). No LibTorch, OpenCV or oneDNN here. On CPUs other than x86 the
// kernels are not built: available() is false there.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "vecbench/core/aligned.hpp"

namespace vecbench::winograd {

/// True when this CPU runs the kernels for channel blocks of `block` floats: 8 (AVX2 and FMA) or
/// 16 (AVX-512F).
bool available(int block = 8);

/// A 4-D float tensor in a channel-blocked layout, B (8 or 16: ConvShape::block) channels to a
/// block (the innermost B floats): element (n, c, y, x) is at
/// data[offset + n*stride_n + (c/B)*stride_cb + y*stride_y + x*stride_x + c%B].
/// Strides and offset count floats.
struct BlockedTensor {
  float* data = nullptr;
  std::int64_t offset = 0;
  std::int64_t stride_n = 0, stride_cb = 0, stride_y = 0, stride_x = 8;
};

/// One 3x3 stride-1 convolution + bias + ReLU.
struct ConvShape {
  int batch = 1;
  int in_c = 0;   ///< a multiple of block
  int out_c = 0;  ///< a multiple of 2 * block (a panel: two registers)
  int in_h = 0, in_w = 0;
  int pad = 0;    ///< zeros on every side (0: "valid", 1: "same")
  int block = 8;  ///< channels per block of the tensors' layout: 8 (AVX2) or 16 (AVX-512)
  int out_h() const { return in_h + 2 * pad - 2; }
  int out_w() const { return in_w + 2 * pad - 2; }
};

/// True when the kernels take `s` (channel counts, sizes).
bool supports(const ConvShape& s);

/// A layer's filters transformed for the kernels (read-only once made; share it between threads
/// and replicas).
struct Filter {
  int in_c = 0, out_c = 0;
  int block = 8;       ///< the channel block it was made for (its panels are 2 * block wide)
  AlignedFloats u;     ///< 36 transformed filters, each in panels of 2 * block output channels
  AlignedFloats bias;  ///< out_c floats
  std::size_t bytes() const;
};

/// Transforms OIHW 3x3 weights (out_c x in_c x 3 x 3 floats) and their bias (out_c floats) for
/// tensors of `block`-channel blocks (8 or 16; std::invalid_argument otherwise).
std::shared_ptr<const Filter> make_filter(const float* oihw, const float* bias, int out_c, int in_c, int block = 8);

/// Tiles per block for shape `s` (sized to keep a block's work in the core's L2 cache).
int block_tiles(const ConvShape& s);
/// The number of blocks of tiles of `s`.
int block_count(const ConvShape& s);
/// Into how many groups of output channels to split each block so that `threads` threads have
/// work (1 where there are blocks enough; at most out_c / (2 * block)). Small maps (Mixed_7b/c's 8x8: 1
/// block at batch 1) need it.
int channel_groups(const ConvShape& s, int threads);
/// Floats of scratch one thread needs for `s`.
std::size_t scratch_floats(const ConvShape& s);

/// Computes units [first, last) of dst = relu(conv3x3(src, f) + bias) for shape `s`, where unit u
/// is block u / groups, channel group u % groups: block_count(s) * groups units in all, to be run
/// in any order, on any thread. A thread's consecutive units of one block transform its input
/// once. `scratch`: scratch_floats(s) floats, owned by the calling thread. `f` must be made for
/// s's channels and block, and available(s.block) true (std::logic_error otherwise).
void run_units(const Filter& f, const ConvShape& s, const BlockedTensor& src, const BlockedTensor& dst, int groups,
               int first, int last, float* scratch);

}  // namespace vecbench::winograd
