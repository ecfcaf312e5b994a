// The oneDNN engine's files (--engine onednn): the weights file mapped in place or rewritten when
// its floats are unaligned, the weights cache within its budget, a start from the weights file
// without the module, and the packed-weights file shared by replicas and refused when it does not
// check out.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "onednn_util.hpp"
#include "vecbench/core/files/checksum.hpp"
#ifdef VECBENCH_WITH_ONEDNN
#include "vecbench/engine/onednn_inception.hpp"
#include "vecbench/engine/weights_file.hpp"
#endif
#include "vecbench/testing/packed_file.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;
using namespace onednn_test;  // NOLINT: kModel, have_onednn, run_on, run_engine
using vecbench::testing::header_value;
using vecbench::testing::packed_file_in;
using vecbench::testing::patch_header;

#ifdef VECBENCH_WITH_ONEDNN
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
