// The oneDNN engine's route on this CPU (engine/cpu_route.hpp): one probe decides the layouts,
// the block, where Winograd runs and which of vecbench's own kernels a network takes, and the
// networks, the output fingerprint and `vecbench devices` all read that one route.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "build_paths.hpp"
#include "vecbench/engine/engines.hpp"
#ifdef VECBENCH_WITH_ONEDNN
#include "vecbench/engine/cpu_route.hpp"
#include "vecbench/engine/onednn_inception.hpp"
#endif

using namespace vecbench;

#ifdef VECBENCH_WITH_ONEDNN
namespace {
std::string run_output(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}
}  // namespace

TEST(CpuRoute, LayoutsAndBlockFollowWhatOneDnnRunsHere) {
  const CpuRoute fp32 = cpu_route(Precision::fp32), bf16 = cpu_route(Precision::bf16),
                 int8 = cpu_route(Precision::int8);
  const bool avx512 = fp32.isa == OneDnnIsa::avx512_core;
  EXPECT_EQ(fp32.block, avx512 ? 16 : 8);
  EXPECT_EQ(fp32.f32_layout, avx512 ? ActivationLayout::blocked16 : ActivationLayout::blocked8);
  EXPECT_EQ(fp32.layout, fp32.f32_layout);  // fp32: one blocked layout end to end
  // int8 runs channels-last; bf16 too on AMX, else on the blocked layout
  EXPECT_EQ(int8.layout, ActivationLayout::channels_last);
  EXPECT_EQ(int8.f32_layout, fp32.f32_layout);
  EXPECT_EQ(bf16.layout, bf16.amx ? ActivationLayout::channels_last : fp32.f32_layout);
  // vecbench's kernels only where the activations are channels-last and the CPU has them
  EXPECT_FALSE(fp32.own_first_layer || fp32.own_pooling);
  if (!bf16.amx) {
    EXPECT_FALSE(bf16.own_first_layer || bf16.own_pooling);
  }
  if (!int8.runs()) {
    EXPECT_FALSE(int8.own_first_layer || int8.own_pooling);
  }
  // one probe: onednn_info() says what the routes say
  const auto info = onednn_info();
  EXPECT_EQ(info["isa"], enum_name(fp32.isa));
  EXPECT_EQ(info["winograd"], fp32.winograd);
  EXPECT_EQ(info["bf16"], bf16.runs());
  EXPECT_EQ(info["int8"], int8.runs());
  EXPECT_EQ(info["routes"]["int8"]["runs"], int8.runs());
  EXPECT_EQ(info["routes"]["fp32"]["layout"], enum_name(fp32.layout));
}

TEST(CpuRoute, TheSwitchesTurnOwnKernelsOffAndNameTheVersion) {
  const CpuRoute on = cpu_route(Precision::int8), off = cpu_route(Precision::int8, false, false, false);
  EXPECT_FALSE(off.own_first_layer);
  EXPECT_FALSE(off.own_pooling);
  EXPECT_FALSE(off.winograd);
  EXPECT_EQ(off.version(), OneDnnRoute::v1);
  EXPECT_EQ(cpu_route(Precision::int8, true, false).own_pooling, false);
  EXPECT_EQ(cpu_route(Precision::int8, false, true).own_first_layer, false);
  if (on.own_first_layer && on.own_pooling) {
    EXPECT_EQ(on.version(), OneDnnRoute::v3);
  }
  CpuRoute r = on;
  r.own_first_layer = true, r.own_pooling = false;
  EXPECT_EQ(r.version(), OneDnnRoute::v2);
  r.own_first_layer = false, r.own_pooling = true;
  EXPECT_EQ(r.version(), OneDnnRoute::v1_pool);
  // the fingerprint's words: int8 names the version and the kernels' ISA
  r.int8_isa = Int8Isa::avx2_vnni;
  EXPECT_EQ(r.fingerprint_words(), " v1 pool avx2_vnni");
  r.precision = Precision::bf16, r.amx = true;
  EXPECT_EQ(r.fingerprint_words(), " avx512_core_amx v1 pool");
  r.own_pooling = false;
  EXPECT_EQ(r.fingerprint_words(), " avx512_core_amx");
  r.amx = false;
  EXPECT_EQ(r.fingerprint_words(), "");  // bf16 on AVX-512 BF16: plain "bf16"
  EXPECT_EQ(cpu_route(Precision::fp32).fingerprint_words(), "");
}

TEST(CpuRoute, WinogradTakesTheStrideOneKernelShapesItHasAndNothingElse) {
  CpuRoute r = cpu_route(Precision::fp32);
  r.winograd = true;
  const auto is = [&](int kh, int kw, int ph, int pw, winograd::Kernel k, int pad) {
    const auto w = r.winograd_for(kh, kw, ph, pw);
    return w && w->kernel == k && w->pad == pad;
  };
  EXPECT_TRUE(is(3, 3, 1, 1, winograd::Kernel::k3x3, 1));
  EXPECT_TRUE(is(3, 3, 0, 0, winograd::Kernel::k3x3, 0));
  EXPECT_TRUE(is(5, 5, 2, 2, winograd::Kernel::k5x5, 2));
  EXPECT_TRUE(is(1, 7, 0, 3, winograd::Kernel::k1x7, 3));
  EXPECT_TRUE(is(7, 1, 3, 0, winograd::Kernel::k7x1, 3));
  EXPECT_TRUE(is(1, 3, 0, 1, winograd::Kernel::k1x3, 1));
  EXPECT_TRUE(is(3, 1, 1, 0, winograd::Kernel::k3x1, 1));
  EXPECT_FALSE(r.winograd_for(1, 1, 0, 0));  // 1x1 layers: oneDNN's direct code
  EXPECT_FALSE(r.winograd_for(3, 3, 1, 0));  // uneven padding
  EXPECT_FALSE(r.winograd_for(1, 7, 1, 3));
  EXPECT_FALSE(r.winograd_for(7, 7, 3, 3));
  r.winograd = false;
  EXPECT_FALSE(r.winograd_for(3, 3, 1, 1));
  EXPECT_EQ(r.to_json()["winograd_layers"].size(), 0u);
  r.winograd = true;
  EXPECT_EQ(r.to_json()["winograd_layers"].size(), std::size(winograd::kAllKernels));
}

// The line `vecbench devices` prints is the route object's own (CpuRoute::describe), from its
// fields: the switch off says direct convolutions, on names the Winograd kernels.
TEST(CpuRoute, DescribeSaysWhatTheRouteRunsFromItsFields) {
  CpuRoute r = cpu_route(Precision::fp32, true, true, false);
  if (!r.runs()) GTEST_SKIP() << "fp32 does not run on this CPU: " << r.why_not();
  EXPECT_EQ(r.describe(), std::string(enum_name(r.layout)) + ", direct convolutions");
  r.winograd = true;
  EXPECT_EQ(r.describe().rfind(std::string(enum_name(r.layout)) + ", Winograd on the stride-1 3x3 ", 0), 0u)
      << r.describe();
  CpuRoute int8 = cpu_route(Precision::int8);
  if (!int8.runs()) {
    EXPECT_EQ(int8.describe(), "does not run here: " + int8.why_not());
  }
}

TEST(CpuRoute, TheDevicesCommandPrintsEachPrecisionsRoute) {
  if (!has_engine(EngineKind::onednn)) GTEST_SKIP() << "built without libdnnl-dev";
  const std::string out = run_output(std::string(VECBENCH_EXE) + " devices cpu");
  const CpuRoute fp32 = cpu_route(Precision::fp32), int8 = cpu_route(Precision::int8);
  EXPECT_NE(out.find(std::string("runs ") + enum_name(fp32.isa) + " code"), std::string::npos) << out;
  EXPECT_NE(out.find(std::string("  fp32  ") + enum_name(fp32.layout)), std::string::npos) << out;
  EXPECT_NE(out.find(fp32.winograd ? "Winograd on the stride-1 3x3" : "direct convolutions"), std::string::npos) << out;
  if (int8.runs()) {
    EXPECT_NE(out.find("fingerprint \"int8" + int8.fingerprint_words() + "\""), std::string::npos) << out;
  } else {
    EXPECT_NE(out.find("  int8  does not run here: int8 needs a CPU with VNNI"), std::string::npos) << out;
  }
}
#else
TEST(CpuRoute, NeedsTheOneDnnEngine) { GTEST_SKIP() << "built without oneDNN"; }
#endif
