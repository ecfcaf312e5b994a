// The route the oneDNN engine takes on this CPU: decided once from one probe of the CPU (oneDNN's
// effective ISA for its kernels, core/system/cpu_features.hpp for vecbench's own) for a precision and the
// engine's switches, and read by everything that depends on it: the network builder
// (src/engine/onednn_*.hpp), the output fingerprint (the route's words: its vectors round apart
// from other routes') and `vecbench devices` (CpuRoute::describe).
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/engine/engine_kind.hpp"
#include "vecbench/engine/winograd.hpp"

namespace vecbench {

/// The instruction set oneDNN runs its fp32 code with here (it may run less than the CPU has:
/// ONEDNN_MAX_CPU_ISA).
enum class OneDnnIsa { older, avx2, avx512_core };
template <>
struct EnumNames<OneDnnIsa> {
  static constexpr const char* what = "oneDNN ISA";
  static constexpr std::array<std::pair<OneDnnIsa, const char*>, 3> names = {
      {{OneDnnIsa::older, "older"}, {OneDnnIsa::avx2, "avx2"}, {OneDnnIsa::avx512_core, "avx512_core"}}};
};

/// The ISA of the int8 kernels oneDNN runs here (AMX's int8 kernels give the same bits as the
/// AVX-512 VNNI ones: s32 sums, the same scaling).
enum class Int8Isa { none, avx2_vnni, avx512_core_vnni };
template <>
struct EnumNames<Int8Isa> {
  static constexpr const char* what = "int8 ISA";
  static constexpr std::array<std::pair<Int8Isa, const char*>, 3> names = {
      {{Int8Isa::none, "none"}, {Int8Isa::avx2_vnni, "avx2_vnni"}, {Int8Isa::avx512_core_vnni, "avx512_core_vnni"}}};
};

/// The memory layout of a network's activations (oneDNN's format tags).
enum class ActivationLayout { blocked8, blocked16, channels_last };
template <>
struct EnumNames<ActivationLayout> {
  static constexpr const char* what = "activation layout";
  static constexpr std::array<std::pair<ActivationLayout, const char*>, 3> names = {
      {{ActivationLayout::blocked8, "nChw8c"},
       {ActivationLayout::blocked16, "nChw16c"},
       {ActivationLayout::channels_last, "nhwc"}}};
};

/// Which of vecbench's own kernels a bf16 or int8 oneDNN network runs, as the output
/// fingerprint names it (its vectors round apart from the others').
enum class OneDnnRoute {
  v1,       ///< oneDNN's layers alone
  v1_pool,  ///< the poolings by vecbench's kernels alone (tests only)
  v2,       ///< the first layer by vecbench's kernel
  v3,       ///< the first layer and the poolings (the default where both run)
};
template <>
struct EnumNames<OneDnnRoute> {
  static constexpr const char* what = "oneDNN route";
  static constexpr std::array<std::pair<OneDnnRoute, const char*>, 4> names = {
      {{OneDnnRoute::v1, "v1"}, {OneDnnRoute::v1_pool, "v1 pool"}, {OneDnnRoute::v2, "v2"}, {OneDnnRoute::v3, "v3"}}};
};

/// A stride-1 layer vecbench's Winograd kernels take: the kernel and the padding it is run with.
struct WinogradLayer {
  winograd::Kernel kernel;
  int pad;
};

/// The oneDNN engine's route for one precision and set of switches on this CPU.
struct CpuRoute {
  Precision precision = Precision::fp32;
  OneDnnIsa isa = OneDnnIsa::older;  ///< what oneDNN runs its fp32 code with
  /// Channels per block of the f32 layout: 16 where oneDNN runs AVX-512 code, 8 otherwise (AVX2).
  /// Every Inception-v3 channel count and concatenation offset is a multiple of 16.
  int block = 8;
  ActivationLayout f32_layout = ActivationLayout::blocked8;  ///< f32 activations (int8: its first layer, last pool)
  /// The activations': the f32 layout, or channels-last for int8 (oneDNN's int8 convolutions run
  /// so) and for bf16 on AMX (oneDNN 2.6 runs AMX only there: results/levers/bf16-amx-20261203.md).
  ActivationLayout layout = ActivationLayout::blocked8;
  /// vecbench's Winograd kernels (engine/winograd.hpp) on the f32 stride-1 3x3, 5x5, 1x7, 7x1, 1x3
  /// and 3x1 conv+ReLU layers (winograd_for): the switch on and the CPU has them for `block`.
  bool winograd = false;
  bool bf16 = false;                 ///< oneDNN runs AVX-512 BF16 code here (bf16 runs)
  bool amx = false;                  ///< oneDNN runs AMX code here (bf16 then channels-last)
  Int8Isa int8_isa = Int8Isa::none;  ///< int8 runs where not none
  /// int8 (AVX-512) and bf16 (AMX): Conv2d_1a by vecbench's kernel straight into u8/bf16
  /// (engine/first_conv.hpp): the switch on and the CPU has the kernel.
  bool own_first_layer = false;
  /// int8 (AVX-512) and bf16 (AMX): the poolings by vecbench's kernels (engine/pool_kernels.hpp).
  bool own_pooling = false;

  /// Whether the precision runs here at all (fp32 needs AVX2 or better, bf16 AVX-512 BF16, int8 VNNI).
  bool runs() const;
  /// Why it does not run here ("" when it does): what the CPU has.
  std::string why_not() const;
  /// Which of vecbench's own kernels a bf16 or int8 network runs (v1: none).
  OneDnnRoute version() const;
  /// Where Winograd runs: the kernel for a stride-1 conv+ReLU layer of kernel kh x kw and padding
  /// ph, pw on f32 activations; nullopt: oneDNN's direct convolution (the kernels' own checks of
  /// channels and sizes come after: winograd::supports).
  std::optional<WinogradLayer> winograd_for(int kh, int kw, int ph, int pw) const;
  /// What the output fingerprint adds to the precision's name, so that vectors of routes that
  /// round apart never share a folder: int8 " v3 avx512_core_vnni" (the route's version and the
  /// kernels' ISA: AVX2-VNNI and AVX-512 VNNI round apart), bf16 on AMX " avx512_core_amx" and
  /// its version past v1; "" otherwise (fp32: every route gives the same vectors within 1e-5).
  std::string fingerprint_words() const;
  /// The route as result files record it.
  nlohmann::json to_json() const;
  /// The route in one line, as `vecbench devices` prints it: its layout, its kernels, and the
  /// words it adds to the fingerprint; or why it does not run here.
  std::string describe() const;
};

/// The route of `precision` on this CPU with the engine's switches (OneDnnOptions' own_first_layer,
/// own_pooling, winograd). The CPU is probed once per process.
CpuRoute cpu_route(Precision precision, bool own_first_layer = true, bool own_pooling = true, bool winograd = true);

}  // namespace vecbench
