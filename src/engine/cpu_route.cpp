// The oneDNN engine's route on this CPU (include/vecbench/engine/cpu_route.hpp): the one place
// the engine asks what the CPU runs (oneDNN's effective ISA through onednn_common.hpp's has_isa;
// vecbench's kernels through their available(), which read core/system/cpu_features.hpp).
#include "vecbench/engine/cpu_route.hpp"

#include "onednn_common.hpp"
#include "vecbench/engine/first_conv.hpp"
#include "vecbench/engine/pool_kernels.hpp"

namespace vecbench {

using onednn_detail::has_isa;

CpuRoute cpu_route(Precision precision, bool own_first_layer, bool own_pooling, bool winograd) {
  CpuRoute r;
  r.precision = precision;
  const bool avx512 = has_isa(dnnl::cpu_isa::avx512_core);
  r.isa = avx512 ? OneDnnIsa::avx512_core : has_isa(dnnl::cpu_isa::avx2) ? OneDnnIsa::avx2 : OneDnnIsa::older;
  r.block = avx512 ? 16 : 8;
  r.f32_layout = avx512 ? ActivationLayout::blocked16 : ActivationLayout::blocked8;
  r.bf16 = has_isa(dnnl::cpu_isa::avx512_core_bf16);
  r.amx = has_isa(dnnl::cpu_isa::avx512_core_amx);
  r.int8_isa = has_isa(dnnl::cpu_isa::avx512_core_vnni) ? Int8Isa::avx512_core_vnni
               : has_isa(dnnl::cpu_isa::avx2_vnni)      ? Int8Isa::avx2_vnni
                                                        : Int8Isa::none;
  const bool int8 = precision == Precision::int8, bf16_amx = precision == Precision::bf16 && r.amx;
  r.layout = int8 || bf16_amx ? ActivationLayout::channels_last : r.f32_layout;
  r.winograd = winograd && winograd::available(r.block);
  // vecbench's first-layer and pooling kernels read and write channels-last: int8 always (where
  // it runs), bf16 on AMX only
  if (int8 && r.int8_isa != Int8Isa::none) {
    r.own_first_layer = own_first_layer && first_conv::available(first_conv::Output::u8);
    r.own_pooling = own_pooling && pool_kernels::available(pool_kernels::Type::u8);
  } else if (bf16_amx) {
    r.own_first_layer = own_first_layer && first_conv::available(first_conv::Output::bf16);
    r.own_pooling = own_pooling && pool_kernels::available(pool_kernels::Type::bf16);
  }
  return r;
}

bool CpuRoute::runs() const {
  switch (precision) {
    case Precision::fp32:
      return isa != OneDnnIsa::older;
    case Precision::bf16:
      return bf16;
    case Precision::int8:
      return int8_isa != Int8Isa::none;
    case Precision::fp16:
      break;
  }
  return false;
}

std::string CpuRoute::why_not() const {
  if (runs()) return "";
  const std::string here = std::string("oneDNN runs ") + enum_name(isa) + " code here";
  switch (precision) {
    case Precision::fp32:
      return "the onednn engine needs AVX2 (" + here + ")";
    case Precision::bf16:
      return "bf16 needs a CPU with AVX-512 BF16 (" + here + ")";
    case Precision::int8:
      return "int8 needs a CPU with VNNI (AVX-512 VNNI or AVX-VNNI); " + here +
             ", where 8-bit products would be no faster than fp32's and saturate";
    case Precision::fp16:
      break;
  }
  return "precision fp16 is not supported (use fp32, bf16 or int8)";
}

OneDnnRoute CpuRoute::version() const {
  if (own_first_layer) return own_pooling ? OneDnnRoute::v3 : OneDnnRoute::v2;
  return own_pooling ? OneDnnRoute::v1_pool : OneDnnRoute::v1;
}

std::optional<WinogradLayer> CpuRoute::winograd_for(int kh, int kw, int ph, int pw) const {
  if (!winograd) return std::nullopt;
  using winograd::Kernel;
  if (kh == 3 && kw == 3 && ph == pw) return WinogradLayer{Kernel::k3x3, ph};
  if (kh == 5 && kw == 5 && ph == pw) return WinogradLayer{Kernel::k5x5, ph};
  if (kh == 1 && kw == 7 && ph == 0) return WinogradLayer{Kernel::k1x7, pw};
  if (kh == 7 && kw == 1 && pw == 0) return WinogradLayer{Kernel::k7x1, ph};
  if (kh == 1 && kw == 3 && ph == 0) return WinogradLayer{Kernel::k1x3, pw};
  if (kh == 3 && kw == 1 && pw == 0) return WinogradLayer{Kernel::k3x1, ph};
  return std::nullopt;
}

namespace {
/// The names of the Winograd kernels a route runs: every one vecbench has, or none.
std::vector<std::string> winograd_kernels(bool on) {
  std::vector<std::string> names;
  if (on)
    for (const winograd::Kernel k : winograd::kAllKernels) names.emplace_back(winograd::kernel_name(k));
  return names;
}
}  // namespace

std::string CpuRoute::fingerprint_words() const {
  if (precision == Precision::int8) return std::string(" ") + enum_name(version()) + " " + enum_name(int8_isa);
  if (precision == Precision::bf16 && amx)
    return version() == OneDnnRoute::v1 ? " avx512_core_amx" : std::string(" avx512_core_amx ") + enum_name(version());
  return "";
}

nlohmann::json CpuRoute::to_json() const {
  nlohmann::json j = {
      {"precision", enum_name(precision)}, {"runs", runs()}, {"isa", enum_name(isa)}, {"layout", enum_name(layout)}};
  if (!runs()) j["why_not"] = why_not();
  if (precision == Precision::fp32) {
    j["winograd_layers"] = winograd_kernels(winograd);  // stride-1 conv+ReLU layers of these; the rest direct
  } else {
    j["f32_layout"] = enum_name(f32_layout);
    j["amx"] = amx;
    if (precision == Precision::int8) j["int8_isa"] = enum_name(int8_isa);
    j["own_first_layer"] = own_first_layer;
    j["own_pooling"] = own_pooling;
    j["version"] = enum_name(version());
  }
  j["fingerprint_words"] = fingerprint_words();
  return j;
}

std::string CpuRoute::describe() const {
  if (!runs()) return "does not run here: " + why_not();
  std::string s = enum_name(layout);
  if (precision == Precision::fp32) {
    std::string layers;
    for (const std::string& k : winograd_kernels(winograd)) layers += " " + k;
    s += layers.empty() ? ", direct convolutions" : ", Winograd on the stride-1" + layers + " layers, the rest direct";
  } else {
    if (amx) s += ", AMX";
    if (precision == Precision::int8) s += std::string(", ") + enum_name(int8_isa);
    s += std::string(", own first layer: ") + (own_first_layer ? "yes" : "no") +
         ", own poolings: " + (own_pooling ? "yes" : "no") + " (" + enum_name(version()) + ")";
  }
  const std::string words = fingerprint_words();
  if (!words.empty()) s += std::string("; fingerprint \"") + enum_name(precision) + words + "\"";
  return s;
}

}  // namespace vecbench
