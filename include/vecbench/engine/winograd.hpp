// Winograd convolutions, F(4x4, 3x3), F(2x2, 5x5), F(4, 7) and F(4, 3), for CPUs with AVX2 and FMA (8-channel
// blocks) or AVX-512 (16-channel blocks). oneDNN 2.x has no Winograd in its AVX2 code, none for
// 1-D kernels anywhere, and on AVX-512 its 3x3 Winograd takes only layers of 64 or more input
// channels, one image at a time (its rounding otherwise depends on the batch): the oneDNN engine
// runs its 3x3, 5x5, 1x7, 7x1, 1x3 and 3x1 stride-1 layers with these (src/engine/onednn_inception.cpp;
// results/PERFORMANCE.md, "Winograd on AVX2"; results/kernels/winograd-*.md).
//
// Each 4x4 output tile of a 3x3 layer is computed from a 6x6 input tile with 36 products per
// channel pair instead of 144, each 4-output tile of a 1x7 or 7x1 layer from 10 inputs with 10
// products instead of 28 (1x3, 3x1: 6 instead of 12): the input tiles are transformed (B^T d B,
// or B^T d along the axis), multiplied by the transformed filters (U = G g G^T or G g, computed
// once in double precision) as 36 (10, 6) matrix products over channels, and transformed back
// (A^T m A, A^T m), with the bias and ReLU applied on the way out. Activations are in
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

#include "vecbench/core/base/aligned.hpp"

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

/// The convolutions the kernels compute: 3x3 as F(4x4, 3x3) (36 products per 16 outputs instead
/// of 144), 1x7 and 7x1 as F(4, 7) along their long axis (10 products per 4 outputs instead of 28;
/// Toom-Cook points 0, +-1, +-2, +-1/2, +-3/4 and infinity, chosen for the smallest float
/// rounding among small rationals), 1x3 and 3x1 as F(4, 3) (6 products per 4 outputs instead of 12),
/// 5x5 as F(2x2, 5x5) (36 products per 4 outputs instead of 100; the 3x3 kernels' points).
enum class Kernel { k3x3, k1x7, k7x1, k1x3, k3x1, k5x5 };
/// Every kernel (a new one goes here too: the packed-weights file's probe transforms each).
constexpr Kernel kAllKernels[] = {Kernel::k3x3, Kernel::k1x7, Kernel::k7x1, Kernel::k1x3, Kernel::k3x1, Kernel::k5x5};
/// Transformed positions of `k`: 36 for F(4x4, 3x3) and F(2x2, 5x5), 10 for F(4, 7), 6 for F(4, 3).
int positions(Kernel k);
/// "3x3", "1x7", ... (the packed-weights file names kernels so).
inline const char* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::k3x3:
      return "3x3";
    case Kernel::k1x7:
      return "1x7";
    case Kernel::k7x1:
      return "7x1";
    case Kernel::k1x3:
      return "1x3";
    case Kernel::k3x1:
      return "3x1";
    case Kernel::k5x5:
      return "5x5";
  }
  return "?";
}

/// One stride-1 convolution + bias + ReLU.
struct ConvShape {
  int batch = 1;
  int in_c = 0;   ///< a multiple of block
  int out_c = 0;  ///< a multiple of 2 * block (a panel: two registers)
  int in_h = 0, in_w = 0;
  int pad =
      0;  ///< zeros on each side of the kernel's long axes (0: "valid"; "same": 1 for 3x3, 1x3, 3x1, 3 for 1x7, 7x1)
  int block = 8;  ///< channels per block of the tensors' layout: 8 (AVX2) or 16 (AVX-512)
  Kernel kernel = Kernel::k3x3;
  int kh() const {
    return kernel == Kernel::k1x7 || kernel == Kernel::k1x3 ? 1
           : kernel == Kernel::k7x1                         ? 7
           : kernel == Kernel::k5x5                         ? 5
                                                            : 3;
  }
  int kw() const {
    return kernel == Kernel::k7x1 || kernel == Kernel::k3x1 ? 1
           : kernel == Kernel::k1x7                         ? 7
           : kernel == Kernel::k5x5                         ? 5
                                                            : 3;
  }
  int pad_y() const { return kh() > 1 ? pad : 0; }
  int pad_x() const { return kw() > 1 ? pad : 0; }
  int out_h() const { return in_h + 2 * pad_y() - kh() + 1; }
  int out_w() const { return in_w + 2 * pad_x() - kw() + 1; }
};

/// True when the kernels take `s` (channel counts, sizes).
bool supports(const ConvShape& s);

/// A layer's filters transformed for the kernels (read-only once made; share it between threads
/// and replicas).
struct Filter {
  int in_c = 0, out_c = 0;
  int block = 8;  ///< the channel block it was made for (its panels are 2 * block wide)
  Kernel kernel = Kernel::k3x3;
  int positions = 36;  ///< transformed filters: 36 (F(4x4, 3x3), F(2x2, 5x5)), 10 (F(4, 7)) or 6 (F(4, 3))
  /// The transformed filters (u_floats() of them), each position's in panels of 2 * block output
  /// channels: position p, panel j, input channel c, output channel o of the panel at
  /// u[p*in_c*out_c + j*in_c*2*block + c*2*block + o].
  const float* u = nullptr;
  const float* bias = nullptr;          ///< out_c floats
  std::shared_ptr<const void> storage;  ///< holds u and bias (make_filter's buffer, or a mapped file)
  std::size_t u_floats() const { return static_cast<std::size_t>(positions) * in_c * out_c; }
  std::size_t bytes() const;
};

/// Transforms OIHW weights of `kernel` (out_c x in_c x kh x kw floats) and their bias (out_c
/// floats) for tensors of `block`-channel blocks (8 or 16; std::invalid_argument otherwise).
std::shared_ptr<const Filter> make_filter(const float* oihw, const float* bias, int out_c, int in_c, int block = 8,
                                          Kernel kernel = Kernel::k3x3);

/// A filter over floats held elsewhere (a packed-weights file mapped read-only,
/// engine/weights_file.hpp): `u` and `bias` laid out as make_filter lays them out for these
/// channels, block and kernel, each at a 64-byte boundary; `storage` keeps them alive.
/// std::invalid_argument where the channels, block or alignment don't fit.
std::shared_ptr<const Filter> filter_view(int out_c, int in_c, int block, Kernel kernel, const float* u,
                                          const float* bias, std::shared_ptr<const void> storage);

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

/// Computes units [first, last) of dst = relu(conv(src, f) + bias) for shape `s`, where unit u
/// is block u / groups, channel group u % groups: block_count(s) * groups units in all, to be run
/// in any order, on any thread. A thread's consecutive units of one block transform its input
/// once. `scratch`: scratch_floats(s) floats, owned by the calling thread. `f` must be made for
/// s's channels, block and kernel, and available(s.block) true (std::logic_error otherwise).
void run_units(const Filter& f, const ConvShape& s, const BlockedTensor& src, const BlockedTensor& dst, int groups,
               int first, int last, float* scratch);

}  // namespace vecbench::winograd
