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
#include "vecbench/core/checksum.hpp"
#include "vecbench/core/npy.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/engine/first_conv.hpp"
#ifdef VECBENCH_WITH_ONEDNN
#include "vecbench/engine/onednn_inception.hpp"
#include "vecbench/engine/pool_kernels.hpp"
#include "vecbench/engine/weights_file.hpp"
#endif
#include "vecbench/input/inputs.hpp"
#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/packed_file.hpp"
#include "vecbench/testing/rel_l2.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;
using vecbench::testing::header_value;
using vecbench::testing::packed_file_in;
using vecbench::testing::patch_header;

namespace {

const std::string kModel = VECBENCH_DEFAULT_MODEL;
const std::string kPhotos = "/usr/share/doc/opencv-doc/examples/data";

bool have_onednn() { return has_engine(EngineKind::onednn); }

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  return vecbench::testing::rel_l2(a.data(), b.data(), a.size());
}

/// `strategy` over every image of `src` on `devices` (threads per replica: 0 splits the cores).
std::unique_ptr<MemorySink> run_on(const ImageSource& src, const ModelSettings& mo, const std::string& strategy,
                                   const std::string& devices, int batch, int threads = 0, int warmup = 0) {
  auto sink = std::make_unique<MemorySink>(src.size());
  RunSettings s;
  s.batch_size = batch;
  s.warmup_batches = warmup;
  DeviceOptions dopt;
  dopt.threads_per_replica = threads;
  run_strategy(strategy, src, all_indices(src.size()), expand_devices(devices, dopt), model_factory(mo), *sink, s, 299);
  return sink;
}

std::unique_ptr<MemorySink> run_engine(const ImageSource& src, const ModelSettings& mo, const std::string& devices,
                                       int batch) {
  return run_on(src, mo, batch == 1 && devices == "cpu" ? "sequential" : "data-parallel", devices, batch, 0, 1);
}

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

namespace {
/// Where a weights file's payload begins: magic (8 bytes), header length (8), header.
std::size_t payload_offset(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  char head[16];
  in.read(head, sizeof head);
  std::uint64_t hlen = 0;
  std::memcpy(&hlen, head + 8, sizeof hlen);
  return 16 + static_cast<std::size_t>(hlen);
}
}  // namespace

TEST(OneDnn, AWeightsFileIsMappedInPlaceAndOneWithUnalignedFloatsIsCopiedAndRewritten) {
  // Start-up maps the weights file and the layers read their floats from it (no copy, no fresh
  // page); a file whose payload is not float-aligned (written before the payload was padded) is
  // copied out, gives the same floats, and is written again aligned.
  const fs::path d = vecbench::testing::fresh_temp_dir("onednn_weights_map");
  InceptionWeights w;
  w.arch = InceptionArch::tf2015;
  w.input_mean = {0.5f, 0.25f, 0.125f};
  for (const char* name : {"a", "b"}) {
    FoldedConv c;
    c.shape = {3, 2, 1, 1};
    std::vector<float> v(6), b(3);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) + (name[0] == 'a' ? 0.5f : -7.25f);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = 1.0f / static_cast<float>(i + 3);
    c.weight = v;
    c.bias = b;
    w.convs.emplace(name, std::move(c));
  }
  const std::string sha(64, 'c');
  const fs::path f = d / "w.onednn";
  save_inception_weights(w, f.string(), sha);
  EXPECT_EQ(payload_offset(f) % 64, 0u) << "the payload is not at a 64-byte boundary";
  auto expect_equal = [&](const InceptionWeights& got, bool mapped, const std::string& what) {
    ASSERT_EQ(got.convs.size(), w.convs.size()) << what;
    for (const auto& [name, c] : w.convs) {
      const FoldedConv& g = got.convs.at(name);
      EXPECT_EQ(g.shape, c.shape) << what << " " << name;
      EXPECT_TRUE(std::equal(g.weight.begin(), g.weight.end(), c.weight.begin(), c.weight.end()))
          << what << " " << name;
      EXPECT_TRUE(std::equal(g.bias.begin(), g.bias.end(), c.bias.begin(), c.bias.end())) << what << " " << name;
      EXPECT_EQ(g.weight.mapped(), mapped) << what << " " << name;
    }
    EXPECT_EQ(got.input_mean, w.input_mean) << what;
  };
  std::string why;
  const auto mapped = load_inception_weights(f.string(), sha, "model.pt", &why);
  ASSERT_TRUE(mapped) << why;
  expect_equal(*mapped, true, "aligned file");
  // A copy of a mapped layer is its own: writing it leaves the mapped floats alone.
  FoldedConv copy = mapped->convs.at("a");
  EXPECT_FALSE(copy.weight.mapped());
  copy.weight[0] = 99.0f;
  EXPECT_EQ(mapped->convs.at("a").weight[0], 0.5f);
  EXPECT_FALSE(load_inception_weights(f.string(), std::string(64, 'd'), "model.pt")) << "another model's file was used";

  // The same file with its header's padding cut: the floats start at an odd offset.
  std::string bytes;
  {
    std::ifstream in(f, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::size_t at = payload_offset(f);
  std::string header = bytes.substr(16, at - 16);
  while (!header.empty() && header.back() == ' ') header.pop_back();
  while ((16 + header.size()) % 4 != 1) header += ' ';
  std::uint64_t hlen = header.size();
  std::string odd =
      bytes.substr(0, 8) + std::string(reinterpret_cast<const char*>(&hlen), 8) + header + bytes.substr(at);
  {
    std::ofstream out(f, std::ios::binary | std::ios::trunc);
    out << odd;
  }
  const auto copied = load_inception_weights(f.string(), sha, "model.pt", &why);
  ASSERT_TRUE(copied) << why;
  expect_equal(*copied, false, "unaligned file");
  EXPECT_EQ(payload_offset(f) % 64, 0u) << "the unaligned file was not written again aligned";
  const auto again = load_inception_weights(f.string(), sha, "model.pt", &why);
  ASSERT_TRUE(again) << why;
  expect_equal(*again, true, "rewritten file");
  fs::remove_all(d);
}

TEST(OneDnn, TheWeightsCacheKeepsTheRecentlyUsedFilesWithinItsBudget) {
  // Every export of a model (every build of the default one) gets its own 87 MB file: the cache
  // drops the least recently used ones beyond its budget, never the file just written, and a load
  // counts as a use.
  const fs::path d = vecbench::testing::fresh_temp_dir("onednn_weights_prune");
  const auto now = fs::file_time_type::clock::now();
  auto make = [&](const std::string& name, std::size_t bytes, int age_s) {
    std::ofstream(d / name) << std::string(bytes, 'x');
    fs::last_write_time(d / name, now - std::chrono::seconds(age_s));
  };
  make("old.onednn", 1000, 500);
  make("a.v2.onednn", 1000, 400);
  make("b.v2.onednn", 1000, 300);
  make("c.v2.onednn", 1000, 200);
  make("new.v2.onednn", 1000, 100);
  make("notes.txt", 5000, 900);  // not a weights file: never counted or removed
  EXPECT_EQ(prune_weights_cache(d.string(), (d / "old.onednn").string(), 2500), 3u);
  EXPECT_TRUE(fs::exists(d / "old.onednn")) << "the file just written was removed";
  EXPECT_TRUE(fs::exists(d / "new.v2.onednn"));
  EXPECT_TRUE(fs::exists(d / "notes.txt"));
  for (const char* gone : {"a.v2.onednn", "b.v2.onednn", "c.v2.onednn"}) EXPECT_FALSE(fs::exists(d / gone)) << gone;
  EXPECT_EQ(prune_weights_cache(d.string(), "", 1u << 20), 0u) << "within the budget: nothing removed";

  // A load touches its file: it outlives a file written later but used less recently.
  InceptionWeights w;
  FoldedConv c;
  c.shape = {1, 1, 1, 1};
  c.weight = std::vector<float>{2.0f};
  c.bias = std::vector<float>{0.5f};
  w.convs.emplace("l", std::move(c));
  const std::string sha(64, 'e');
  save_inception_weights(w, (d / "used.v2.onednn").string(), sha);
  fs::last_write_time(d / "used.v2.onednn", now - std::chrono::seconds(1000));
  ASSERT_TRUE(load_inception_weights((d / "used.v2.onednn").string(), sha, "m.pt"));
  EXPECT_GT(fs::last_write_time(d / "used.v2.onednn"), now - std::chrono::seconds(60)) << "the load did not touch it";
  EXPECT_EQ(prune_weights_cache(d.string(), "", fs::file_size(d / "used.v2.onednn")), 2u);
  EXPECT_TRUE(fs::exists(d / "used.v2.onednn"));

  // The file just written keeps its export's weights file and packed-weights file for this ISA
  // and oneDNN, however old (with a budget for one of them, writing one must not drop the other
  // at every start); a packed file of another ISA may go, and so may a killed write's temp file
  // older than 10 minutes (a younger one may be a write under way).
  for (const auto& e : fs::directory_iterator(d)) fs::remove(e.path());
  const std::string x = std::string(64, 'a') + "-9",
                    packed = fs::path(packed_file_path((d / (x + ".v2.onednn")).string())).filename();
  make(x + ".v2.onednn", 1000, 100);
  make(packed, 2000, 900);
  make(x + ".packed.isa1.dnnl1.0.0.v2.onednn", 2000, 800);
  make("y-9.v2.onednn", 1000, 50);
  make("." + x + ".packed.isa7.dnnl2.6.3.v2.on.tmp.123.0", 5000, 3600);
  make("." + x + ".packed.isa7.dnnl2.6.3.v2.on.tmp.124.0", 5000, 60);
  EXPECT_EQ(prune_weights_cache(d.string(), (d / (x + ".v2.onednn")).string(), 3500), 2u);
  EXPECT_TRUE(fs::exists(d / packed)) << "the export's packed file was dropped";
  EXPECT_FALSE(fs::exists(d / (x + ".packed.isa1.dnnl1.0.0.v2.onednn"))) << "another ISA's packed file kept";
  EXPECT_FALSE(fs::exists(d / "y-9.v2.onednn"));
  EXPECT_FALSE(fs::exists(d / ("." + x + ".packed.isa7.dnnl2.6.3.v2.on.tmp.123.0"))) << "an old killed write kept";
  EXPECT_TRUE(fs::exists(d / ("." + x + ".packed.isa7.dnnl2.6.3.v2.on.tmp.124.0"))) << "a write under way removed";
  fs::remove_all(d);
}

TEST(OneDnn, AWeightsFileStartsTheEngineWithoutLoadingTheModuleAndGivesTheSameFeatures) {
  const fs::path d = vecbench::testing::fresh_temp_dir("onednn_weights_file");
  ::setenv("VECBENCH_WEIGHTS_DIR", (d / "w").string().c_str(), 1);
  SyntheticSource src(2);
  ModelSettings od;
  od.path = kModel;
  od.engine = EngineKind::onednn;
  const std::size_t l0 = torchscript_module_loads();
  const auto first = run_engine(src, od, "cpu", 1);  // reads the module, writes the weights file
  const std::size_t l1 = torchscript_module_loads();
  EXPECT_EQ(l1 - l0, 1u);
  std::vector<fs::path> files;  // the weights file (the packed-weights file beside it: the next test)
  for (const auto& e : fs::directory_iterator(d / "w"))
    if (e.path().string().find(".packed.") == std::string::npos) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].extension(), ".onednn");
  const auto second = run_engine(src, od, "cpu", 1);  // from the weights file
  EXPECT_EQ(torchscript_module_loads(), l1) << "the module was loaded although the weights file is there";
  for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(first->features(i), second->features(i)) << i;
  fs::resize_file(files[0], fs::file_size(files[0]) / 2);  // a damaged file is not used (and is rewritten)
  const auto third = run_engine(src, od, "cpu", 1);
  EXPECT_EQ(torchscript_module_loads(), l1 + 1);
  for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(first->features(i), third->features(i)) << i;
  // Issue #26, case 2: 4 bytes flipped in the middle of the weights (same size, header intact)
  // made every later run's vectors ~1e19, status ok. The payload checksum refuses the file now.
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(files[0]) / 2));
    f.write("\xff\xff\x7f\x7f", 4);
  }
  const auto fourth = run_engine(src, od, "cpu", 1);
  EXPECT_EQ(torchscript_module_loads(), l1 + 2) << "the corrupted weights file was used";
  for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(first->features(i), fourth->features(i)) << i;
  ::unsetenv("VECBENCH_WEIGHTS_DIR");
  fs::remove_all(d);
}

namespace {
// The packed-weights file's test (below): the first run's features and pack count, and each later
// run's packs checked against what the file should have spared.
struct PackedFileRuns {
  SyntheticSource src{2};
  ModelSettings od;
  std::unique_ptr<MemorySink> first;
  std::size_t all = 0;  ///< the first run's packs: every layer
  fs::path file;
  static std::size_t packs() { return onednn_counters().weight_packs; }
  void expect_run(std::size_t want_packs, const std::string& what) const {
    const std::size_t before = packs();
    const auto got = run_engine(src, od, "cpu", 1);
    EXPECT_EQ(packs() - before, want_packs) << what;
    for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(got->features(i), first->features(i)) << what << " " << i;
  }
};

// From the file with two replicas: one oneDNN memory per entry taken, as with one replica (made
// once the entry checks out; the second replica takes the first one's).
void expect_two_replicas_share_the_files_entries(const PackedFileRuns& r) {
  const auto memories = [] { return onednn_counters().weight_memories; };
  std::size_t m0 = memories();
  run_engine(r.src, r.od, "cpu", 1);
  const std::size_t one_replica = memories() - m0;
  EXPECT_GT(one_replica, 0u);
  m0 = memories();
  const std::size_t p1 = PackedFileRuns::packs();
  const auto two = run_engine(r.src, r.od, "cpu/2", 1);
  EXPECT_EQ(memories() - m0, one_replica) << "a replica made its own memories over the file's entries";
  EXPECT_EQ(PackedFileRuns::packs(), p1) << "cpu/2 from the file packed something";
  for (std::size_t i = 0; i < r.src.size(); ++i) EXPECT_EQ(two->features(i), r.first->features(i)) << "cpu/2 " << i;
}

// A flipped byte in an entry's bytes (a Winograd filter's, a oneDNN entry's; checked at first
// use) packs that entry again alone; in a oneDNN descriptor (checked as the file is read) the
// whole file is refused.
void expect_flipped_bytes_repacked(const PackedFileRuns& r) {
  const fs::path& file = r.file;
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(file) / 2));
    f.write("\xff\xff\x7f\x7f", 4);
  }
  r.expect_run(1, "a flipped byte in an entry: that entry packed again, and only that one");
  r.expect_run(0, "rewritten after the flipped byte");
  // the same in a oneDNN entry's bytes (the first one's first byte); in its descriptor (the
  // 9th byte: its dims), checked as the file is read, the whole file is refused
  const auto flip_first_onednn = [&](const char* key, std::size_t offset) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    std::uint64_t hlen = 0;
    f.seekg(8);
    f.read(reinterpret_cast<char*>(&hlen), sizeof hlen);
    std::string head(static_cast<std::size_t>(hlen), '\0');
    f.seekg(24);
    f.read(head.data(), static_cast<std::streamsize>(hlen));
    const auto at = nlohmann::json::parse(head).at("onednn").at(0).at(key).get<std::size_t>();
    const auto pos = static_cast<std::streamoff>(24 + hlen + at + offset);
    char c = 0;
    f.seekg(pos);
    f.get(c);
    f.seekp(pos);
    f.put(static_cast<char>(c ^ 0x40));
  };
  flip_first_onednn("at", 0);
  r.expect_run(1, "a flipped byte in a oneDNN entry: that entry packed again, and only that one");
  r.expect_run(0, "rewritten after the flipped byte in a oneDNN entry");
  flip_first_onednn("desc_at", 8);
  r.expect_run(r.all, "a flipped byte in a oneDNN descriptor: the file was used");
  r.expect_run(0, "rewritten after the flipped descriptor byte");
}

// A header that names another layer, Winograd transform or folded weights refuses the file; an
// entry made from other floats (its source checksum) is packed again alone.
void expect_other_sources_repacked(const PackedFileRuns& r) {
  const fs::path& file = r.file;
  patch_header(file, "\"Mixed_7b.", "\"Mixed_7c.", false);  // a bit flip in a layer's name
  r.expect_run(r.all, "a renamed entry: the file was used");
  r.expect_run(0, "rewritten after the renamed entry");
  for (const std::string key : {"\"winograd_probe\":\"", "\"folded_xxh3\":\""}) {
    const std::string value = header_value(file, key);
    ASSERT_EQ(value.size(), 16u) << key;
    patch_header(file, key + value, key + std::string(16, value[0] == '0' ? '1' : '0'), true);
    r.expect_run(r.all, key + ": the file was used");
    r.expect_run(0, "rewritten after " + key);
  }
  // The first entry (Conv2d_1a_3x3, with the input normalization folded into its floats) as if
  // packed from other floats: that layer alone is packed again, and the file written again.
  const std::string src_key = "\"src_xxh3\":\"", value = header_value(file, src_key);
  ASSERT_EQ(value.size(), 16u);
  patch_header(file, src_key + value, src_key + std::string(16, value[0] == '0' ? '1' : '0'), true);
  r.expect_run(1, "an entry from other floats");
  r.expect_run(0, "rewritten after the entry from other floats");
  // The same for the first Winograd filter, and an entry named for a layer the model lacks (the
  // file checksum resealed: only the name refuses it).
  const std::string wino = header_value(file, src_key, "\"winograd\":[");
  ASSERT_EQ(wino.size(), 16u);
  patch_header(file, src_key + wino, src_key + std::string(16, wino[0] == '0' ? '1' : '0'), true);
  r.expect_run(1, "a Winograd filter from other floats");
  r.expect_run(0, "rewritten after the Winograd filter from other floats");
  patch_header(file, "\"Mixed_7b.", "\"Mixed_9b.", true);
  r.expect_run(r.all, "an entry for a layer the model lacks: the file was used");
  r.expect_run(0, "rewritten after the entry for a layer the model lacks");
}
}  // namespace

TEST(OneDnn, ThePackedWeightsFileSkipsPackingAndIsRefusedWhenItDoesNotCheckOut) {
  // The first run packs every layer (oneDNN's layouts, the Winograd filters) and writes the
  // packed-weights file; the next runs pack nothing and give the same bits. A file with a flipped
  // header byte, or whose header names another Winograd transform or other folded weights, is
  // not used: that run packs again (same bits) and writes a good file. An entry with a flipped
  // byte (its checksum, checked at first use), or made from other floats than the layer's (its
  // source checksum), is packed again alone.
  const fs::path d = vecbench::testing::fresh_temp_dir("onednn_packed_file");
  ::setenv("VECBENCH_WEIGHTS_DIR", (d / "w").string().c_str(), 1);
  PackedFileRuns r;
  r.od.path = kModel;
  r.od.engine = EngineKind::onednn;
  const std::size_t p0 = PackedFileRuns::packs();
  r.first = run_engine(r.src, r.od, "cpu", 1);
  r.all = PackedFileRuns::packs() - p0;
  EXPECT_GE(r.all, 94u);
  r.file = packed_file_in(d / "w");
  ASSERT_FALSE(r.file.empty()) << "no packed-weights file written";
  EXPECT_NE(r.file.string().find(".dnnl"), std::string::npos) << r.file;
  r.expect_run(0, "second run: the file holds every layer");
  expect_two_replicas_share_the_files_entries(r);
  expect_flipped_bytes_repacked(r);
  expect_other_sources_repacked(r);
  if (backend_info()["onednn"].value("bf16", false)) {  // bf16 weights (oneDNN's rounding): kept too
    r.od.precision = Precision::bf16;
    const std::size_t before = PackedFileRuns::packs();
    const auto bf16 = run_engine(r.src, r.od, "cpu", 1);
    EXPECT_GT(PackedFileRuns::packs(), before) << "bf16: nothing packed, though the file held f32 weights only";
    const std::size_t again = PackedFileRuns::packs();
    const auto bf16_again = run_engine(r.src, r.od, "cpu", 1);
    EXPECT_EQ(PackedFileRuns::packs(), again) << "bf16: packed again although the file holds its weights";
    for (std::size_t i = 0; i < r.src.size(); ++i)
      EXPECT_EQ(bf16_again->features(i), bf16->features(i)) << "bf16 " << i;
  }
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
