// The int8 route (--precision int8, `vecbench calibrate`): close to fp32 on real photos but not
// equal to it, the same bits at every batch size, thread count and strategy, refused with the
// reason without a calibration, with another model's, on another engine or on a CPU without VNNI,
// and never mixed with fp32 vectors or another calibration's in one output folder.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "build_paths.hpp"
#include "vecbench/core/files/checksum.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/engine/first_conv.hpp"
#include "vecbench/engine/int8_calibration.hpp"
#include "vecbench/engine/weights_file.hpp"
#ifdef VECBENCH_WITH_ONEDNN
#include "vecbench/engine/onednn_inception.hpp"
#include "vecbench/engine/pool_kernels.hpp"
#endif
#include "vecbench/experiment/verify.hpp"
#include "vecbench/input/inputs.hpp"
#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/packed_file.hpp"
#include "vecbench/testing/rel_l2.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;

namespace {

const std::string kModel = VECBENCH_DEFAULT_MODEL;
const std::string kPhotos = "/usr/share/doc/opencv-doc/examples/data";

bool int8_runs_here() {
#ifdef VECBENCH_WITH_ONEDNN
  return cpu_route(Precision::int8).runs();
#else
  return false;
#endif
}

std::string int8_isa() {
#ifdef VECBENCH_WITH_ONEDNN
  return enum_name(cpu_route(Precision::int8).int8_isa);
#else
  return "none";
#endif
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// A list file of up to `n` opencv-doc photos in `dir`.
fs::path photo_list(std::size_t n, const fs::path& dir, std::size_t skip = 0) {
  const fs::path list = dir / ("photos" + std::to_string(skip) + ".txt");
  std::ofstream out(list);
  std::size_t k = 0, seen = 0;
  for (const char* f : {"lena.jpg", "baboon.jpg", "fruits.jpg", "building.jpg", "messi5.jpg", "orange.jpg",
                        "HappyFish.jpg", "starry_night.jpg", "graf1.png", "home.jpg"})
    if (fs::exists(fs::path(kPhotos) / f) && seen++ >= skip && k < n)
      out << (fs::path(kPhotos) / f).string() << "\n", ++k;
  return list;
}

std::unique_ptr<MemorySink> run_on(const ImageSource& src, const ModelSettings& mo, const std::string& strategy,
                                   const std::string& devices, int batch, int threads) {
  auto sink = std::make_unique<MemorySink>(src.size());
  RunSettings s;
  s.batch_size = batch;
  s.warmup_batches = 0;  // no blank warm-up images among the calibration's
  DeviceOptions dopt;
  dopt.threads_per_replica = threads;
  run_strategy(strategy, src, all_indices(src.size()), expand_devices(devices, dopt), model_factory(mo), *sink, s, 299);
  return sink;
}

/// `vecbench ARGS`, stdout and stderr into `log`; returns the exit status.
int run_vecbench(const std::string& args, const fs::path& log, const std::string& env = "") {
  const std::string cmd = env + " " + std::string(VECBENCH_EXE) + " " + args + " > " + log.string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

namespace {
// Int8.CloseToFp32...'s parts (below), each checking one thing of the int8 route.

/// The int8 calibration of the fp32 network `fp32` on `cal_src`, saved as d/cal.json (its path).
std::string calibrate(const ImageSource& cal_src, const ModelSettings& fp32, const fs::path& d) {
  ModelSettings observe = fp32;
  observe.observe = std::make_shared<ActivationRanges>();
  run_on(cal_src, observe, "sequential", "cpu", 1, 0);
  Int8Calibration cal;
  cal.model_sha256 = read_model_info(kModel).identity();
  cal.images = cal_src.size();
  cal.images_sha256 = "test";
  cal.resize = "tf-legacy";
  cal.ranges = observe.observe->ranges(CalibrationMethod::max);
  EXPECT_EQ(cal.ranges.size(), 61u) << "5 stem layers, 11 blocks' concatenations and 45 inner layers";
  for (const auto& [point, r] : cal.ranges) EXPECT_GT(r, 0.0f) << point;
  save_int8_calibration(cal, (d / "cal.json").string());
  return (d / "cal.json").string();
}

/// s32 sums are exact: nothing depends on how the batch or the threads split them (`one`: batch 1).
void expect_the_same_bits_for_every_split(const ImageSource& src, const ModelSettings& q, const MemorySink& one) {
  for (const auto& [strategy, devices, batch, threads] : std::vector<std::tuple<std::string, std::string, int, int>>{
           {"sequential", "cpu", 3, 2}, {"sequential", "cpu", 2, 1}, {"data-parallel", "cpu/2", 2, 1}}) {
    const auto got = run_on(src, q, strategy, devices, batch, threads);
    for (std::size_t i = 0; i < src.size(); ++i)
      EXPECT_EQ(got->features(i), one.features(i))
          << strategy << " " << devices << " batch " << batch << ", image " << i << ": not the bits of batch 1";
  }
}

/// oneDNN's first layer and poolings in place of vecbench's kernels: as close to `one` as int8 allows.
void expect_onednns_layers_close(const ImageSource& src, const ModelSettings& q, const MemorySink& one) {
  // oneDNN's f32 first layer and a reorder instead of the kernel: the same quantization of the
  // same layer, the 27 products summed in another order, so a u8 step apart at a rare position
  // (FirstConv.IsOneDnnsLayerAndReorderButForARareStep). One step anywhere moves this synthetic
  // network's int8 vector by a few percent (one step of 710,432 moved one by 4.5 %,
  // results/int8/first-layer-20261203.md): as far apart as any int8 vector may be from fp32.
  ModelSettings q_dnnl = q;
  q_dnnl.own_first_layer = false;
  const std::size_t own_mid = onednn_counters().own_first_layers;
  const auto via_dnnl = run_on(src, q_dnnl, "sequential", "cpu", 1, 1);
  EXPECT_EQ(onednn_counters().own_first_layers, own_mid) << "own_first_layer off, yet the kernel ran";
  for (std::size_t i = 0; i < src.size(); ++i)
    EXPECT_LE(vecbench::testing::rel_l2(via_dnnl->features(i).data(), one.features(i).data(), 2048), kInt8RelTolerance)
        << i;
  // oneDNN's poolings instead of vecbench's: its pool branches average u8 values before their 1x1
  // layer (two roundings where the kernels' order, the layer first into f32, has one), its max
  // pools give the same values (PoolKernels.MaxPoolIsOneDnnsPoolingAndReorderBitForBit)
  ModelSettings q_pool = q;
  q_pool.own_pooling = false;
  const std::size_t pools_mid = onednn_counters().own_poolings;
  const auto via_pool = run_on(src, q_pool, "sequential", "cpu", 1, 1);
  EXPECT_EQ(onednn_counters().own_poolings, pools_mid) << "own_pooling off, yet the kernels ran";
  for (std::size_t i = 0; i < src.size(); ++i) {
    const double e = vecbench::testing::rel_l2(via_pool->features(i).data(), one.features(i).data(), 2048);
    EXPECT_LE(e, kInt8RelTolerance) << i;
    if (pool_kernels::available(pool_kernels::Type::u8)) {
      EXPECT_GT(e, 0.0) << i << ": the same bits, so the pool branches did not change order";
    }
  }
}

/// The s8 weights kept in the packed-weights file under their floats' and scales' checksum.
void expect_s8_weights_kept_packed(const ImageSource& src, const ModelSettings& q, const MemorySink& one,
                                   const fs::path& d) {
  // The s8 weights (scaled per output channel by vecbench's own arithmetic) are kept in the
  // packed-weights file under a checksum of their floats and their scales: the first int8 start
  // in a fresh cache writes the file, the next one packs nothing and gives the same bits. An
  // entry packed under other scales (another version of that arithmetic, as if: its checksum
  // changed, the header resealed) is packed again, never taken.
  ::setenv("VECBENCH_WEIGHTS_DIR", (d / "w2").string().c_str(), 1);
  std::size_t before = onednn_counters().weight_packs;
  const auto first = run_on(src, q, "sequential", "cpu", 1, 1);
  EXPECT_GE(onednn_counters().weight_packs - before, 93u) << "a fresh cache: every layer packed";
  const fs::path packed = vecbench::testing::packed_file_in(d / "w2");
  ASSERT_FALSE(packed.empty()) << "no packed-weights file written for the s8 weights";
  const std::string scaled_key = "\"scaled\":true,\"src_xxh3\":\"";
  const std::string entry_src = vecbench::testing::header_value(packed, scaled_key);
  ASSERT_EQ(entry_src.size(), 16u) << "no scaled entry in the file's header";
  const auto inode = [&] {  // a write replaces the file by rename: another inode (a load only touches it)
    struct stat st {};
    return ::stat(packed.c_str(), &st) == 0 ? st.st_ino : ino_t{0};
  };
  const ino_t written = inode();
  {  // an entry's source checksum covers a scheme tag, the floats and the per-channel scales
    // (1 / (largest |w| / 127)) vecbench packed them with: not the floats alone
    fs::path weights;
    for (const auto& e : fs::directory_iterator(d / "w2"))
      if (e.path().string().find(".packed.") == std::string::npos) weights = e.path();
    const std::string sha = weights.filename().string().substr(0, weights.filename().string().find('-'));
    const auto w = load_inception_weights(weights.string(), sha, kModel);
    ASSERT_TRUE(w) << weights;
    const FoldedConv& l = w->convs.at("Mixed_5b.branch1x1");
    const std::size_t per = l.weight.size() / static_cast<std::size_t>(l.shape[0]);
    std::vector<float> inv(static_cast<std::size_t>(l.shape[0]));
    for (std::size_t o = 0; o < inv.size(); ++o) {
      float hi = 0.0f;
      for (std::size_t k = 0; k < per; ++k) hi = std::max(hi, std::fabs(l.weight.data()[o * per + k]));
      inv[o] = 1.0f / (hi > 0 ? hi / 127.0f : 1.0f);
    }
    const std::string tag = "s8 = reorder(w, oscale per output channel) v1";
    Xxh3 with, floats;
    with.update(tag.data(), tag.size());
    with.update(l.weight.data(), l.weight.size() * sizeof(float));
    with.update(inv.data(), inv.size() * sizeof(float));
    floats.update(l.weight.data(), l.weight.size() * sizeof(float));
    const std::string got = vecbench::testing::header_value(packed, scaled_key, "\"name\":\"Mixed_5b.branch1x1\"");
    EXPECT_EQ(got, with.hex()) << "Mixed_5b.branch1x1's source checksum";
    EXPECT_NE(got, floats.hex());
  }
  before = onednn_counters().weight_packs;
  const auto again = run_on(src, q, "sequential", "cpu", 1, 1);
  EXPECT_EQ(onednn_counters().weight_packs - before, 0u) << "packed again although the file holds the s8 weights";
  EXPECT_EQ(inode(), written) << "an int8 start that packed nothing rewrote the packed-weights file";
  for (std::size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(again->features(i), one.features(i)) << i;
    EXPECT_EQ(first->features(i), one.features(i)) << i;
  }
  vecbench::testing::patch_header(packed, scaled_key + entry_src,
                                  scaled_key + std::string(16, entry_src[0] == '0' ? '1' : '0'), true);
  before = onednn_counters().weight_packs;
  const auto other = run_on(src, q, "sequential", "cpu", 1, 1);
  EXPECT_EQ(onednn_counters().weight_packs - before, 1u) << "an entry packed under other scales was taken";
  for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(other->features(i), one.features(i)) << i;
}
}  // namespace

TEST(Int8, CloseToFp32OnRealPhotosAndTheSameBitsAtEveryBatchSizeThreadCountAndStrategy) {
  if (!has_engine(EngineKind::onednn)) GTEST_SKIP() << "built without libdnnl-dev";
  if (!int8_runs_here()) GTEST_SKIP() << "no VNNI on this CPU (Int8.RefusedWithTheReason checks the refusal)";
  const fs::path d = vecbench::testing::fresh_temp_dir("int8_photos");
  ::setenv("VECBENCH_WEIGHTS_DIR", (d / "w").string().c_str(), 1);  // its own packed-weights file
  // calibrated on some photos, checked on others
  const auto cal_src = make_source(photo_list(4, d, 0).string(), InputOptions{});
  const auto src = make_source(photo_list(5, d, 4).string(), InputOptions{});
  ASSERT_GE(src->size(), 3u) << "opencv-doc photos missing (apt-get install opencv-doc)";
  ModelSettings fp32;
  fp32.path = kModel;
  fp32.engine = EngineKind::onednn;
  const auto ref = run_on(*src, fp32, "sequential", "cpu", 1, 0);

  const std::string calibration = calibrate(*cal_src, fp32, d);

  ModelSettings q = fp32;
  q.precision = Precision::int8;
  q.calibration = calibration;
  const std::size_t own_before = onednn_counters().own_first_layers, pools_before = onednn_counters().own_poolings;
  const auto one = run_on(*src, q, "sequential", "cpu", 1, 1);
  // the first layer by vecbench's kernel straight into u8 where the CPU runs it (AVX-512)
  EXPECT_EQ(onednn_counters().own_first_layers - own_before, first_conv::available(first_conv::Output::u8) ? 1u : 0u);
  // and the poolings by its kernels (engine/pool_kernels.hpp): 4 max pools (the stem's 2, Mixed_6a's
  // and 7a's), Mixed_7c's max-pool branch, 8 average-pool branches and the last pool
  EXPECT_EQ(onednn_counters().own_poolings - pools_before, pool_kernels::available(pool_kernels::Type::u8) ? 14u : 0u);
  double sum = 0;
  for (std::size_t i = 0; i < src->size(); ++i) {
    ASSERT_EQ(one->features(i).size(), 2048u) << one->error(i);
    const double e = vecbench::testing::rel_l2(one->features(i).data(), ref->features(i).data(), 2048);
    EXPECT_LE(e, kInt8RelTolerance) << "image " << i;
    EXPECT_GE(e, 1e-4) << "image " << i << ": as close as fp32, so int8 did not run";
    sum += e;
  }
  // 8.5 % at the median on 100 photos (results/int8/README.md); a wrong scale anywhere is far off
  EXPECT_LE(sum / static_cast<double>(src->size()), 0.15) << "mean relative L2 over the photos";
  expect_the_same_bits_for_every_split(*src, q, *one);
  expect_onednns_layers_close(*src, q, *one);
  expect_s8_weights_kept_packed(*src, q, *one, d);
  ::unsetenv("VECBENCH_WEIGHTS_DIR");
  fs::remove_all(d);
}

TEST(Int8, RefusedWithTheReason) {
  if (!has_engine(EngineKind::onednn)) GTEST_SKIP() << "built without libdnnl-dev";
  const fs::path d = vecbench::testing::fresh_temp_dir("int8_refused");
  const std::string run = "vectorize --images synthetic:2 --format npy --devices cpu --precision int8 --out ";
  // no calibration
  EXPECT_EQ(run_vecbench(run + (d / "a").string() + " --engine onednn", d / "log"), 1);
  const std::string no_cal = read_text(d / "log");
  if (int8_runs_here()) {
    EXPECT_NE(no_cal.find("vecbench calibrate"), std::string::npos) << no_cal;
    ASSERT_EQ(run_vecbench("calibrate --images synthetic:2 --out " + (d / "cal.json").string(), d / "log"), 0)
        << read_text(d / "log");
    // another engine
    EXPECT_EQ(
        run_vecbench(run + (d / "b").string() + " --engine torchscript --calibration " + (d / "cal.json").string(),
                     d / "log"),
        1);
    EXPECT_NE(read_text(d / "log").find("int8 runs on the onednn engine only"), std::string::npos)
        << read_text(d / "log");
    // another model's calibration: named, with both models
    auto j = nlohmann::json::parse(read_text(d / "cal.json"));
    j["model_sha256"] = std::string(64, 'a');
    std::ofstream(d / "other.json") << j.dump();
    EXPECT_EQ(run_vecbench(run + (d / "c").string() + " --calibration " + (d / "other.json").string(), d / "log"), 1);
    const std::string other = read_text(d / "log");
    EXPECT_NE(other.find((d / "other.json").string()), std::string::npos) << other;
    EXPECT_NE(other.find("made for model aaaaaaaaaaaaaaaa"), std::string::npos) << other;
    // a calibration without one of the network's points: the point is named
    j = nlohmann::json::parse(read_text(d / "cal.json"));
    j["ranges"].erase("Mixed_6c.branch7x7dbl_3");
    std::ofstream(d / "partial.json") << j.dump();
    EXPECT_NE(run_vecbench(run + (d / "e").string() + " --calibration " + (d / "partial.json").string(), d / "log"), 0);
    EXPECT_NE(read_text(d / "log").find("no range for Mixed_6c.branch7x7dbl_3"), std::string::npos)
        << read_text(d / "log");
    // that run wrote no vector: the rerun with the whole calibration is not refused by the
    // fingerprint it left (which names the partial file's hash)
    EXPECT_EQ(run_vecbench(run + (d / "e").string() + " --calibration " + (d / "cal.json").string(), d / "log"), 0)
        << read_text(d / "log");
    EXPECT_NE(read_text(d / "log").find("records, no vector,"), std::string::npos) << read_text(d / "log");
    // not a calibration file
    std::ofstream(d / "junk.json") << "{\"format\": \"something else\"}";
    EXPECT_EQ(run_vecbench(run + (d / "f").string() + " --calibration " + (d / "junk.json").string(), d / "log"), 1);
    EXPECT_NE(read_text(d / "log").find("not an int8 calibration file"), std::string::npos) << read_text(d / "log");
  } else {
    EXPECT_NE(no_cal.find("VNNI"), std::string::npos) << no_cal;
  }
  // a calibration without int8 is a mistake, not ignored
  std::ofstream(d / "any.json") << "{}";
  EXPECT_EQ(run_vecbench("vectorize --images synthetic:2 --format npy --devices cpu --out " + (d / "h").string() +
                             " --calibration " + (d / "any.json").string(),
                         d / "log"),
            1);
  EXPECT_NE(read_text(d / "log").find("is for --precision int8 only"), std::string::npos) << read_text(d / "log");
  // a CPU without VNNI (oneDNN held to AVX-512 without it): the reason, before anything is written
  EXPECT_EQ(run_vecbench(run + (d / "g").string() + " --calibration " + (d / "any.json").string(), d / "log",
                         "ONEDNN_MAX_CPU_ISA=AVX512_CORE DNNL_MAX_CPU_ISA=AVX512_CORE"),
            1);
  EXPECT_NE(read_text(d / "log").find("int8 needs a CPU with VNNI"), std::string::npos) << read_text(d / "log");
  EXPECT_FALSE(fs::exists(d / "g" / "vecbench.json"));
  fs::remove_all(d);
}

TEST(Int8, CalibrateCommandIsRepeatableAndItsFingerprintKeepsOutputFoldersApart) {
  if (!has_engine(EngineKind::onednn)) GTEST_SKIP() << "built without libdnnl-dev";
  if (!int8_runs_here()) GTEST_SKIP() << "no VNNI on this CPU";
  const fs::path d = vecbench::testing::fresh_temp_dir("int8_cli");
  const std::string list = photo_list(3, d).string();
  ASSERT_EQ(run_vecbench("calibrate --images " + list + " --out " + (d / "cal.json").string(), d / "log"), 0)
      << read_text(d / "log");
  ASSERT_EQ(run_vecbench("calibrate --images " + list + " --out " + (d / "again.json").string(), d / "log"), 0);
  EXPECT_EQ(read_text(d / "cal.json"), read_text(d / "again.json")) << "the same photos, another calibration";
  const auto cal = load_int8_calibration((d / "cal.json").string());
  EXPECT_EQ(cal.images, 3u);
  EXPECT_EQ(cal.model_sha256, read_model_info(kModel).identity());
  EXPECT_EQ(cal.images_sha256.size(), 64u);
  ASSERT_EQ(run_vecbench("calibrate --images " + list + " --limit 2 --out " + (d / "two.json").string(), d / "log"), 0);
  // mean-max: each point's mean of the photos' largest values, never above their largest
  ASSERT_EQ(
      run_vecbench("calibrate --images " + list + " --method mean-max --out " + (d / "mm.json").string(), d / "log"),
      0);
  const auto mm = load_int8_calibration((d / "mm.json").string());
  EXPECT_EQ(mm.method, CalibrationMethod::mean_max);
  std::size_t below = 0;
  for (const auto& [point, r] : cal.ranges) {
    EXPECT_LE(mm.ranges.at(point), r * (1 + 1e-6)) << point;
    below += mm.ranges.at(point) < r * (1 - 1e-6);
  }
  EXPECT_GT(below, 0u) << "3 photos never gave one point a smaller mean than largest";
  EXPECT_NE(load_int8_calibration((d / "two.json").string()).images_sha256, cal.images_sha256);

  const std::string out = (d / "out").string();
  const std::string run = "vectorize --images " + list + " --format npy --devices cpu/2 --out " + out;
  ASSERT_EQ(run_vecbench(run + " --precision int8 --calibration " + (d / "cal.json").string(), d / "log"), 0)
      << read_text(d / "log");
  const auto stored = nlohmann::json::parse(read_text(d / "out" / "vecbench.json"));
  // v3: the first layer and the poolings by vecbench's kernels (both on AVX-512), v1: neither
  const std::string scheme = first_conv::available(first_conv::Output::u8) ? "int8 v3 " : "int8 v1 ";
  EXPECT_NE(stored.dump().find(scheme + int8_isa() + " calibration " + cal.sha256.substr(0, 16)), std::string::npos)
      << stored.dump();
  // fp32 vectors, or another calibration's, are refused: the folder keeps one fingerprint
  EXPECT_EQ(run_vecbench(run, d / "log"), 3) << read_text(d / "log");
  EXPECT_EQ(run_vecbench(run + " --precision int8 --calibration " + (d / "two.json").string(), d / "log"), 3)
      << read_text(d / "log");
  EXPECT_NE(read_text(d / "log").find("arithmetic"), std::string::npos) << read_text(d / "log");
  // an experiment: int8 runs verified against the fp32 reference within int8's tolerance, and the
  // result names the calibration by its hash
  std::ofstream(d / "exp.json") << nlohmann::json{
      {"name", "int8"},
      {"engine", "onednn"},
      {"precision", "int8"},
      {"calibration", (d / "cal.json").string()},
      {"images", {{"generate", {{"count", 4}, {"seed", 1}, {"formats", {"jpg"}}}}}},
      {"matrix", {{{"strategy", {"data-parallel"}}, {"devices", {"cpu/2"}}, {"batch", {2}}}}},
      {"repetitions", 1}};
  ASSERT_EQ(
      run_vecbench("run " + (d / "exp.json").string() + " --no-trace --results " + (d / "res").string(), d / "log"), 0)
      << read_text(d / "log");
  fs::path result;
  for (const auto& e : fs::recursive_directory_iterator(d / "res"))
    if (e.path().extension() == ".json") result = e.path();
  const auto r = nlohmann::json::parse(read_text(result));
  EXPECT_EQ(r["config"]["effective"]["int8_calibration"]["sha256"], cal.sha256) << result;
  const auto& v = r["runs"][0]["verification"];
  EXPECT_GT(v["max_rel_diff"].get<double>(), 1e-4) << v.dump();
  EXPECT_EQ(v["rel_tolerance"].get<double>(), kInt8RelTolerance) << v.dump();
  // the same calibration resumes: nothing left to do
  ASSERT_EQ(run_vecbench(run + " --precision int8 --calibration " + (d / "again.json").string(), d / "log"), 0);
  EXPECT_NE(read_text(d / "log").find("ok=0"), std::string::npos) << read_text(d / "log");
  fs::remove_all(d);
}

TEST(Int8, TuneRanksTheInt8RouteApartAndNeverSavesItAsTheProfile) {
  if (!has_engine(EngineKind::onednn)) GTEST_SKIP() << "built without libdnnl-dev";
  if (!int8_runs_here()) GTEST_SKIP() << "no VNNI on this CPU";
  const fs::path d = vecbench::testing::fresh_temp_dir("int8_tune");
  ASSERT_EQ(run_vecbench("calibrate --images synthetic:2 --out " + (d / "cal.json").string(), d / "log"), 0);
  const std::string env = "VECBENCH_PROFILE_DIR=" + (d / "profiles").string();
  ASSERT_EQ(run_vecbench("tune --images synthetic:4 --budget 9 --save --model " + kModel + " --results " +
                             (d / "res").string() + " --calibration " + (d / "cal.json").string(),
                         d / "log", env),
            0)
      << read_text(d / "log");
  const std::string out = read_text(d / "log");
  const auto best = out.find("\nbest: "), best8 = out.find("best int8 (opt-in");
  ASSERT_NE(best, std::string::npos) << out;
  ASSERT_NE(best8, std::string::npos) << out;
  const std::string fp32_line = out.substr(best, best8 - best);
  EXPECT_EQ(fp32_line.find("--precision int8"), std::string::npos) << "the fp32 winner is an int8 route: " << out;
  EXPECT_NE(out.find("--precision int8 --calibration " + (d / "cal.json").string(), best8), std::string::npos) << out;
  // the saved profile is the fp32 winner's: a later fp32 run uses it as it is
  for (const auto& e : fs::recursive_directory_iterator(d / "profiles"))
    if (e.is_regular_file()) {
      EXPECT_EQ(read_text(e.path()).find("int8"), std::string::npos) << e.path();
    }
  fs::remove_all(d);
}
