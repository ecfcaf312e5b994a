// The oneDNN engine (--engine onednn) gives the TorchScript module's features: real photos, any
// batch size (including a last partial batch), with and without Winograd, from the default,
// the fused and a torchvision-layout export, and the same bits at every batch size, thread count
// and strategy; bad files fail with the file named.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "build_paths.hpp"
#include "vecbench/core/files/checksum.hpp"
#include "vecbench/core/files/npy.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/engine/first_conv.hpp"
#ifdef VECBENCH_WITH_ONEDNN
#include "vecbench/engine/onednn_inception.hpp"
#include "vecbench/engine/pool_kernels.hpp"
#include "vecbench/engine/weights_file.hpp"
#endif
#include "onednn_util.hpp"
#include "vecbench/input/inputs.hpp"
#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/packed_file.hpp"
#include "vecbench/testing/rel_l2.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;
using namespace onednn_test;  // NOLINT: kModel, have_onednn, run_on, run_engine
using vecbench::testing::header_value;
using vecbench::testing::packed_file_in;
using vecbench::testing::patch_header;

namespace {

const std::string kPhotos = "/usr/share/doc/opencv-doc/examples/data";

void expect_same(const MemorySink& got, const MemorySink& ref, std::size_t n, const std::string& what) {
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(got.features(i).size(), 2048u) << what << ": " << got.error(i);
    EXPECT_LE(rel_l2(got.features(i), ref.features(i)), 1e-4) << what << " image " << i;
  }
}

std::unique_ptr<ImageSource> photos(std::size_t n, const fs::path& dir) {
  std::ofstream list(dir / "list.txt");
  std::size_t k = 0;
  for (const char* f : {"lena.jpg", "baboon.jpg", "fruits.jpg", "building.jpg", "messi5.jpg", "orange.jpg"})
    if (fs::exists(fs::path(kPhotos) / f) && k < n) list << (fs::path(kPhotos) / f).string() << "\n", ++k;
  list.close();
  return make_source((dir / "list.txt").string(), InputOptions{});
}

}  // namespace

TEST(OneDnn, EqualsTorchScriptOnRealPhotosAnyBatchWithAndWithoutWinograd) {
  if (!have_onednn()) GTEST_SKIP() << "built without libdnnl-dev";
  const fs::path d = vecbench::testing::fresh_temp_dir("onednn_photos");
  const auto src = photos(5, d);
  ASSERT_GE(src->size(), 3u) << "opencv-doc photos missing (apt-get install opencv-doc)";
  ModelSettings ts;
  ts.path = kModel;
  const auto ref = run_engine(*src, ts, "cpu", 1);
  ModelSettings od = ts;
  od.engine = EngineKind::onednn;
  // batch 3 on 5 photos: one full batch and a partial one (padded, on the batch-3 network)
  for (const auto& [devices, batch] : std::vector<std::pair<std::string, int>>{{"cpu", 1}, {"cpu/2", 3}, {"cpu", 2}}) {
    for (const bool wino : {true, false}) {
      od.winograd = wino;
      const auto got = run_engine(*src, od, devices, batch);
      expect_same(*got, *ref, src->size(),
                  devices + " batch " + std::to_string(batch) + (wino ? " winograd" : " direct"));
    }
  }
  fs::remove_all(d);
}

TEST(OneDnn, BitIdenticalFeaturesForEveryBatchSizeThreadCountAndStrategy) {
  // The default route's engine: an image's vector may not depend on the images batched with it,
  // on the batch size, the threads or the strategy (FID/KID of one set must not change with them).
  if (!have_onednn()) GTEST_SKIP() << "built without libdnnl-dev";
  const fs::path d = vecbench::testing::fresh_temp_dir("onednn_batch_free");
  const auto src = photos(6, d);
  ASSERT_GE(src->size(), 5u) << "opencv-doc photos missing (apt-get install opencv-doc)";
  ModelSettings od;
  od.path = kModel;
  od.engine = EngineKind::onednn;
  auto run = [&](const std::string& strategy, const std::string& devices, int threads, int batch) {
    return run_on(*src, od, strategy, devices, batch, threads);
  };
  const auto ref = run("sequential", "cpu", 1, 1);
  auto expect_bits = [&](const MemorySink& got, const std::string& what) {
    for (std::size_t i = 0; i < src->size(); ++i) {
      ASSERT_EQ(got.features(i).size(), 2048u) << what << ": " << got.error(i);
      EXPECT_EQ(got.features(i), ref->features(i)) << what << ", image " << i << ": not bit-identical to batch 1";
    }
  };
  for (const int batch : {1, 3, 4, 8})
    for (const int threads : {1, 2})
      expect_bits(*run("sequential", "cpu", threads, batch),
                  "batch " + std::to_string(batch) + ", " + std::to_string(threads) + " threads");
  for (const char* strategy : {"naive", "sharded", "data-parallel", "mirrored"})
    expect_bits(*run(strategy, "cpu/2", 1, 3), std::string(strategy) + " cpu/2 batch 3");
  fs::remove_all(d);
}

#ifdef VECBENCH_WITH_ONEDNN
TEST(OneDnn, OneNetworkPerReplicaForEveryBatchSizeAndOneSharedCopyOfThePackedWeights) {
  // 5 photos in batches of 3: a full batch and a partial one of 2. The partial batch runs on the
  // batch-3 network (padded): one build per replica, none for the partial batch, and the second
  // replica packs no layer of its own (it uses the first one's copy). No weights files: each run
  // packs (the packed-weights file would spare the second run all of it).
  ::setenv("VECBENCH_WEIGHTS_DIR", "off", 1);
  const fs::path d = vecbench::testing::fresh_temp_dir("onednn_builds");
  const auto src = photos(5, d);
  ASSERT_EQ(src->size(), 5u) << "opencv-doc photos missing (apt-get install opencv-doc)";
  ModelSettings ts;
  ts.path = kModel;
  const auto ref = run_engine(*src, ts, "cpu", 1);
  ModelSettings od = ts;
  od.engine = EngineKind::onednn;
  od.winograd = false;
  auto run_counted = [&](const std::string& devices, OneDnnCounters& delta) {
    const auto before = onednn_counters();
    auto got = run_engine(*src, od, devices, 3);
    const auto after = onednn_counters();
    delta.network_builds = after.network_builds - before.network_builds;
    delta.weight_packs = after.weight_packs - before.weight_packs;
    delta.packed_bytes = after.packed_bytes - before.packed_bytes;
    delta.weight_memories = after.weight_memories - before.weight_memories;
    return got;
  };
  OneDnnCounters one, two;
  const auto got1 = run_counted("cpu", one);
  const auto got2 = run_counted("cpu/2", two);
  expect_same(*got1, *ref, src->size(), "cpu batch 3, partial last batch");
  expect_same(*got2, *ref, src->size(), "cpu/2 batch 3");
  EXPECT_EQ(one.network_builds, 1u) << "one replica, batches of 3 and 2: one network";
  EXPECT_EQ(two.network_builds, 2u) << "two replicas: one network each";
  EXPECT_GE(one.weight_packs, 94u) << "Inception-v3 has 94 convolutions";
  EXPECT_EQ(two.weight_packs, one.weight_packs) << "the second replica packed its own copy";
  EXPECT_EQ(two.packed_bytes, one.packed_bytes);
  // one oneDNN memory per packed layer, made once: the second replica takes the first one's
  // (making another writes a padded layout's padding while the first replica may be reading it)
  EXPECT_EQ(one.weight_memories, one.weight_packs);
  EXPECT_EQ(two.weight_memories, two.weight_packs) << "the second replica made its own memories over shared weights";
  ::unsetenv("VECBENCH_WEIGHTS_DIR");
  fs::remove_all(d);
}

#endif

TEST(OneDnn, ReadsTheFusedExport) {
  if (!have_onednn()) GTEST_SKIP() << "built without libdnnl-dev";
  SyntheticSource src(3);
  ModelSettings ts;
  ts.path = kModel;
  const auto ref = run_engine(src, ts, "cpu", 1);
  ModelSettings od;
  od.path = std::string(VECBENCH_DEFAULT_FUSED_MODEL);
  od.engine = EngineKind::onednn;
  expect_same(*run_engine(src, od, "cpu", 1), *ref, src.size(), "fused export");
}

TEST(OneDnn, TorchvisionLayoutPoolsCountThePadding) {
  // torchvision's blocks average over the padded window and end Mixed_7c with an average pool;
  // the tf2015 ones do neither. A different arch and seed exercises the other pooling code.
  if (!have_onednn()) GTEST_SKIP() << "built without libdnnl-dev";
  const fs::path d = vecbench::testing::fresh_temp_dir("onednn_tv");
  const std::string model = (d / "tv.pt").string();
  const std::string cmd = std::string(VECBENCH_PYTHON) + " " + VECBENCH_SOURCE_DIR +
                          "/tools/export_inception.py --arch torchvision --seed 3 --out " + model + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  SyntheticSource src(2);
  ModelSettings ts;
  ts.path = model;
  const auto ref = run_engine(src, ts, "cpu", 1);
  ModelSettings od = ts;
  od.engine = EngineKind::onednn;
  expect_same(*run_engine(src, od, "cpu", 1), *ref, src.size(), "torchvision arch");
  fs::remove_all(d);
}

TEST(OneDnn, AFileWithoutTheLayersFailsNamingIt) {
  if (!have_onednn()) GTEST_SKIP() << "built without libdnnl-dev";
  const fs::path d = vecbench::testing::fresh_temp_dir("onednn_bad");
  const std::string model = (d / "identity.pt").string();
  const std::string cmd =
      std::string(VECBENCH_PYTHON) +
      " -c \"import torch,sys; torch.jit.save(torch.jit.script(torch.nn.Identity()), sys.argv[1])\" " + model;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  SyntheticSource src(1);
  ModelSettings od;
  od.path = model;
  od.engine = EngineKind::onednn;
  try {
    run_engine(src, od, "cpu", 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(model), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_engine("tensorrt", "--engine"), ConfigError);  // unknown names stop at the edge
  fs::remove_all(d);
}

TEST(OneDnn, VectorizeCommandLine) {
  if (!have_onednn()) GTEST_SKIP() << "built without libdnnl-dev";
  const fs::path d = vecbench::testing::fresh_temp_dir("onednn_cli");
  const std::string base = std::string(VECBENCH_EXE) + " vectorize --images synthetic:3 --format npy --out ";
  ASSERT_EQ(std::system((base + (d / "a").string() + " --engine onednn --devices cpu/2 > /dev/null 2>&1").c_str()), 0);
  ASSERT_EQ(std::system((base + (d / "b").string() + " --engine torchscript > /dev/null 2>&1").c_str()), 0);
  for (int i = 0; i < 3; ++i) {
    const std::string f = "synthetic:" + std::to_string(i) + ".npy";
    const auto a = npy::as_f32(npy::load(d / "a" / f)), b = npy::as_f32(npy::load(d / "b" / f));
    ASSERT_EQ(a.size(), 2048u);
    EXPECT_LE(rel_l2(a, b), 1e-4) << f;
  }
  if (backend_info()["onednn"].value("bf16", false)) {  // bf16's fingerprint names AMX's kernels where they run
    ASSERT_EQ(std::system((base + (d / "f").string() + " --engine onednn --precision bf16 > /dev/null 2>&1").c_str()),
              0);
    std::ifstream meta(d / "f" / "vecbench.json");
    const std::string text((std::istreambuf_iterator<char>(meta)), std::istreambuf_iterator<char>());
    const bool amx = backend_info()["onednn"].value("amx", false);
    // " v3": and its first layer and poolings by vecbench's kernels (engine/first_conv.hpp,
    // engine/pool_kernels.hpp), where they run
#ifdef VECBENCH_WITH_ONEDNN
    const bool own_first = cpu_route(Precision::bf16).own_first_layer;
#else
    const bool own_first = false;
#endif
    const std::string named = own_first ? "\"bf16 avx512_core_amx v3\"" : "\"bf16 avx512_core_amx\"";
    EXPECT_EQ(text.find(named) != std::string::npos, amx) << text;
    if (!amx) {
      EXPECT_NE(text.find("\"bf16\""), std::string::npos) << text;
    }
  }
  const int rc =
      std::system((base + (d / "c").string() + " --engine tvm > " + (d / "err.txt").string() + " 2>&1").c_str());
  EXPECT_NE(rc, 0);
  std::ifstream err(d / "err.txt");
  const std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc >> 8, 1) << text;  // a usage error
  EXPECT_NE(text.find("--engine"), std::string::npos) << text;
  EXPECT_NE(text.find("tvm"), std::string::npos) << text;
  fs::remove_all(d);
}

// The AVX2 route end to end on whichever x86-64 CPU runs the tests: vecbench under
// tools/cpuid_mask.c (CPUID without AVX-512, VNNI or AMX) takes oneDNN's AVX2 kernels, 8-channel
// blocks and vecbench's AVX2 Winograd kernels, the code an AVX2-only CPU (AMD Zen 3) runs, and
// gives TorchScript's features.
TEST(OneDnn, TheAvx2RouteSeenThroughAMaskedCpuidEqualsTorchScript) {
#ifndef VECBENCH_HAS_CPUID_MASK
  GTEST_SKIP() << "not an x86-64 build";
#else
  if (!have_onednn()) GTEST_SKIP() << "built without libdnnl-dev";
  const fs::path d = vecbench::testing::fresh_temp_dir("onednn_avx2");
  const std::string args = std::string(VECBENCH_EXE) + " vectorize --images synthetic:3 --format npy --batch 2 --out ";
  const std::string log = " > " + (d / "log").string() + " 2>&1";
  const auto read_log = [&] {
    std::ifstream in(d / "log");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const int rc = std::system((std::string("CPUID_MASK=avx2 LD_AUDIT=") + VECBENCH_CPUID_MASK + " ONEDNN_VERBOSE=1 " +
                              args + (d / "a").string() + " --engine onednn --devices cpu/2" + log)
                                 .c_str());
  if (WEXITSTATUS(rc) == 125 && read_log().find("cannot fault CPUID") != std::string::npos) GTEST_SKIP() << read_log();
  ASSERT_EQ(WEXITSTATUS(rc), 0) << read_log();
  const std::string masked = read_log();
  EXPECT_NE(masked.find("onednn_verbose,info,cpu,isa:Intel AVX2\n"), std::string::npos) << masked.substr(0, 2000);
  EXPECT_EQ(masked.find("avx512"), std::string::npos) << "an AVX-512 kernel ran under the mask";
  EXPECT_NE(masked.find("engine onednn"), std::string::npos) << masked.substr(0, 2000);
  // the route `vecbench devices` prints under the mask: AVX2's 8-channel blocks, Winograd, no int8
  ASSERT_EQ(std::system((std::string("CPUID_MASK=avx2 LD_AUDIT=") + VECBENCH_CPUID_MASK + " " + VECBENCH_EXE +
                         " devices cpu" + log)
                            .c_str()),
            0);
  const std::string route = read_log();
  EXPECT_NE(route.find("runs avx2 code"), std::string::npos) << route;
  EXPECT_NE(route.find("  fp32  nChw8c, Winograd on the stride-1 3x3"), std::string::npos) << route;
  EXPECT_NE(route.find("  int8  does not run here: int8 needs a CPU with VNNI"), std::string::npos) << route;
  ASSERT_EQ(std::system((args + (d / "b").string() + " --engine torchscript" + log).c_str()), 0) << read_log();
  for (int i = 0; i < 3; ++i) {
    const std::string f = "synthetic:" + std::to_string(i) + ".npy";
    const auto a = npy::as_f32(npy::load(d / "a" / f)), b = npy::as_f32(npy::load(d / "b" / f));
    ASSERT_EQ(a.size(), 2048u);
    EXPECT_LE(rel_l2(a, b), 1e-4) << f;
  }
  fs::remove_all(d);
#endif
}

namespace {
// bf16 on AMX (channels-last): the first layer by vecbench's kernel straight into bf16 where the
// CPU runs it, else (and with own_first_layer off) oneDNN's f32 layer and a reorder: the same
// rounding of sums in another order, one bf16 step apart at ~0.04 % of the layer's outputs
// (FirstConv.IsOneDnnsLayerAndReorderButForARareStep), which 93 bf16 layers carry to 1-2 %
void expect_bf16_amx_kernels_close_to_onednns(const ImageSource& src, const ModelSettings& od) {
  const std::size_t own0 = onednn_counters().own_first_layers, pools_own0 = onednn_counters().own_poolings;
  const auto own = run_engine(src, od, "cpu", 1);
  const std::size_t own1 = onednn_counters().own_first_layers;
  EXPECT_EQ(own1 - own0, first_conv::available(first_conv::Output::bf16) ? 1u : 0u);
  // 5 max pools, 8 average-pool branches and the last pool (Int8.CloseToFp32...'s count)
  EXPECT_EQ(onednn_counters().own_poolings - pools_own0, pool_kernels::available(pool_kernels::Type::bf16) ? 14u : 0u);
  ModelSettings via = od;
  via.own_first_layer = false;
  const auto dnnl = run_engine(src, via, "cpu", 1);
  EXPECT_EQ(onednn_counters().own_first_layers, own1) << "own_first_layer off, yet the kernel ran";
  for (std::size_t i = 0; i < src.size(); ++i) EXPECT_LE(rel_l2(own->features(i), dnnl->features(i)), 0.1) << i;
  // the poolings by vecbench's kernels (engine/pool_kernels.hpp) where the CPU runs them, else
  // (and with own_pooling off) oneDNN's: the pool branches round once where oneDNN's rounded
  // twice, and the last pool keeps the features in float where oneDNN's rounded them to bf16
  const bool own_pool = pool_kernels::available(pool_kernels::Type::bf16);
  ModelSettings via_pool = od;
  via_pool.own_pooling = false;
  const std::size_t pools0 = onednn_counters().own_poolings;
  const auto dnnl_pool = run_engine(src, via_pool, "cpu", 1);
  EXPECT_EQ(onednn_counters().own_poolings, pools0) << "own_pooling off, yet the kernels ran";
  for (std::size_t i = 0; i < src.size(); ++i) {
    const double e = rel_l2(own->features(i), dnnl_pool->features(i));
    EXPECT_LE(e, 0.1) << i;
    EXPECT_EQ(e > 0.0, own_pool) << i;
    if (own_pool) {  // features in float: not all of them bf16 values
      std::size_t not_bf16 = 0;
      for (const float v : own->features(i)) {
        std::uint32_t u = 0;
        std::memcpy(&u, &v, sizeof u);
        not_bf16 += (u & 0xffffu) != 0;
      }
      EXPECT_GT(not_bf16, 1000u) << i;
    }
  }
}
}  // namespace

TEST(OneDnn, Bf16IsCloseButNotEqualOrRefusedWithTheReason) {
  if (!have_onednn()) GTEST_SKIP() << "built without libdnnl-dev";
  const fs::path d = vecbench::testing::fresh_temp_dir("onednn_bf16");
  const auto src = photos(3, d);
  ModelSettings ts;
  ts.path = kModel;
  const auto ref = run_engine(*src, ts, "cpu", 1);
  ModelSettings od = ts;
  od.engine = EngineKind::onednn;
  od.precision = Precision::bf16;
  if (backend_info()["onednn"].value("bf16", false)) {
    // where oneDNN has AMX, bf16 runs it (channels-last activations; on the blocked layout
    // oneDNN 2.6 takes its AVX-512 code, half as fast as fp32: results/levers/bf16-amx-20261203.md)
    const bool amx = backend_info()["onednn"].value("amx", false);
    for (const int batch : {1, 2}) {
      const auto amx_before = onednn_counters().amx_convolutions;
      const auto got = run_engine(*src, od, "cpu/2", batch);
      const auto amx_convs = onednn_counters().amx_convolutions - amx_before;
      if (amx)  // two replicas; every layer but the first (3 input channels, f32)
        EXPECT_EQ(amx_convs, 2u * 93u) << "batch " << batch << ": bf16 convolutions off AMX";
      else
        EXPECT_EQ(amx_convs, 0u) << "AMX kernels on a CPU whose oneDNN reports none";
      for (std::size_t i = 0; i < src->size(); ++i) {
        ASSERT_EQ(got->features(i).size(), 2048u) << got->error(i);
        const double e = rel_l2(got->features(i), ref->features(i));
        // bfloat16 keeps 8 bits of mantissa; over 94 layers that is 2-6% here (results/PERFORMANCE.md)
        EXPECT_LE(e, 0.1) << "image " << i;
        EXPECT_GE(e, 1e-5) << "image " << i << ": as close as fp32, so bf16 did not run";
      }
    }
    if (amx) expect_bf16_amx_kernels_close_to_onednns(*src, od);
  } else {
    try {
      run_engine(*src, od, "cpu", 1);
      FAIL() << "expected bf16 to be refused on this CPU";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("AVX-512 BF16"), std::string::npos) << e.what();
    }
  }
  od.precision = Precision::fp16;
  EXPECT_THROW(run_engine(*src, od, "cpu", 1), Error);
  fs::remove_all(d);
}
