// `vecbench vectorize` into an output folder as a careful user runs it: a second writer, another
// model or preprocessing, corrupt JPEGs, a cut manifest, duplicate and differently spelled lists,
// colliding and over-long names, a decompression bomb, bad option values, and kill -9 at random
// points. Each case failed (silently wrong or mixed vectors, or a crash) before the store.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <random>
#include <set>
#include <thread>

#include "build_paths.hpp"
#include "dist_util.hpp"
#include "vecbench/output/fingerprint.hpp"
#include "vecbench/output/manifest.hpp"
#include "vecbench/testing/fifo_gate.hpp"

using namespace vecbench;
using namespace vecbench::disttest;

namespace {
const std::string kModel = VECBENCH_DEFAULT_MODEL;

std::string vectorize(const fs::path& out, const std::string& images, const std::string& extra = "") {
  return kExe + " vectorize --images " + images + " --out " + out.string() + " " + extra;
}

/// Inputs of `dir`'s manifest.jsonl with their line counts (any status).
std::map<std::string, int> line_counts(const fs::path& dir) {
  std::map<std::string, int> n;
  for (const auto& j : lines_of(dir / "manifest.jsonl")) ++n[j["input"].get<std::string>()];
  return n;
}

void copy_photo(const std::string& name, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(fs::path(kPhotos) / name, to, fs::copy_options::overwrite_existing);
}
}  // namespace

namespace {
/// Whether `lock` names its holder (OutputLock writes "pid N on host H" once it holds the folder).
bool lock_names_its_holder(const fs::path& lock) {
  std::ifstream in(lock);
  std::string holder;
  return std::getline(in, holder) && holder.rfind("pid ", 0) == 0;
}
}  // namespace

// A holds the folder while B starts: A's first input is a FIFO, which A cannot finish reading
// until the test writes a JPEG into it, and the test does so only after B has ended. So B always
// meets a running A (a gate, not "A takes seconds"), however loaded the machine is.
TEST(StoreCli, TwoWritersOnOneFolderOneIsRefusedAndNothingIsCorrupted) {
  const fs::path d = tmpdir("cli_lock");
  ASSERT_TRUE(vecbench::testing::make_fifo(d / "gate.jpg")) << std::strerror(errno);
  std::ofstream list(d / "a.txt"), again(d / "again.txt");
  list << "gate.jpg\n";
  const char* photos[] = {"baboon.jpg", "fruits.jpg", "home.jpg", "messi5.jpg"};
  for (int i = 0; i < 11; ++i) {
    const std::string name = "p" + std::to_string(i) + ".jpg";
    copy_photo(photos[i % 4], d / name);
    list << name << "\n";
    again << name << "\n";
  }
  list.close();
  again.close();
  const std::string flags = "--format shards --shard-rows 4 --warmup 0";
  std::atomic<bool> a_ended{false};
  std::thread ta([&] {
    EXPECT_EQ(sh(vectorize(d / "out", (d / "a.txt").string(), flags)).rc, 0);
    a_ended = true;
  });
  const auto ended = [&] { return a_ended.load(); };
  EXPECT_TRUE(vecbench::testing::wait_until([&] { return lock_names_its_holder(d / "out" / ".vecbench.lock"); }, ended))
      << "A never held the folder";
  const auto b = sh(vectorize(d / "out", "synthetic:20:7", flags));
  std::ifstream jpeg(fs::path(kPhotos) / "baboon.jpg", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(jpeg)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(vecbench::testing::feed_fifo(d / "gate.jpg", bytes, ended)) << "A never opened its FIFO input";
  ta.join();
  EXPECT_EQ(b.rc, 3) << b.out;
  EXPECT_NE(b.out.find("in use"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("pid "), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("on host"), std::string::npos) << b.out;
  const auto f = features_of(d / "out");  // every line readable, each input once
  EXPECT_EQ(f.size(), 12u);
  for (const auto& [k, n] : line_counts(d / "out")) EXPECT_EQ(n, 1) << k;
  // A's inputs again (the FIFO aside: reading it again would wait for another writer)
  const auto rerun = sh(vectorize(d / "out", (d / "again.txt").string(), flags));
  EXPECT_EQ(rerun.rc, 0) << rerun.out;
  EXPECT_NE(rerun.out.find("0 to do, 11 already done"), std::string::npos) << rerun.out;
  fs::remove_all(d);
}

TEST(StoreCli, ResumeWithAnotherModelOrPreprocessingIsRefusedNamingTheFields) {
  const fs::path d = tmpdir("cli_fp");
  const fs::path other = fs::path(VECBENCH_BINARY_DIR) / "models" / "test_inception_tf2015_seed1.pt";
  if (!fs::exists(other)) {
    const auto e = sh(std::string(VECBENCH_PYTHON) + " " + VECBENCH_SOURCE_DIR +
                      "/tools/export_inception.py --arch tf2015 --seed 1 --out " + other.string());
    ASSERT_EQ(e.rc, 0) << e.out;
  }
  ASSERT_EQ(sh(vectorize(d / "out", "synthetic:3", "--engine none")).rc, 0);
  const auto before = lines_of(d / "out" / "manifest.jsonl");
  struct Case {
    std::string flags, field;
  };
  for (const Case& c :
       {Case{"--engine none --model " + other.string(), "model_sha256"},
        Case{"--engine none --resize bilinear", "resize"}, Case{"--engine none --exif apply", "exif"},
        Case{"--engine none --fast-decode", "fast_decode"}, Case{"--engine torchscript", "arithmetic"}}) {
    const auto r = sh(vectorize(d / "out", "synthetic:6", c.flags));
    EXPECT_EQ(r.rc, 3) << c.flags << "\n" << r.out;
    EXPECT_NE(r.out.find(c.field + ": "), std::string::npos) << c.flags << "\n" << r.out;
    EXPECT_NE(r.out.find("--replace-fingerprint"), std::string::npos) << r.out;
    EXPECT_EQ(lines_of(d / "out" / "manifest.jsonl"), before) << "the refused run wrote to the manifest";
  }
  // The explicit way forward: everything redone under the new fingerprint, the old moved aside.
  const auto r = sh(vectorize(d / "out", "synthetic:6", "--engine none --resize bilinear --replace-fingerprint"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("6 to do, 0 already done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("moved to"), std::string::npos) << r.out;
  const std::string fp = read_store_fingerprint(d / "out").id();
  for (const auto& j : lines_of(d / "out" / "manifest.jsonl")) EXPECT_EQ(j["fp"], fp) << j.dump();
  fs::remove_all(d);
}

TEST(StoreCli, ACorruptJpegWithAnEndMarkerIsAnErrorUnlessLenient) {
  const fs::path d = tmpdir("cli_corrupt");
  const auto bytes = [] {
    std::ifstream in(fs::path(kPhotos) / "baboon.jpg", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  ASSERT_GT(bytes.size(), 1000u);
  std::ofstream(d / "cut.jpg", std::ios::binary) << bytes.substr(0, bytes.size() * 6 / 10) << "\xFF\xD9";
  copy_photo("home.jpg", d / "good.jpg");
  std::ofstream(d / "list.txt") << "cut.jpg\ngood.jpg\n";
  const auto strict = sh(vectorize(d / "strict", (d / "list.txt").string(), "--engine none"));
  EXPECT_EQ(strict.rc, 2) << strict.out;
  std::map<std::string, nlohmann::json> by;
  for (const auto& j : lines_of(d / "strict" / "manifest.jsonl")) by[fs::path(j["input"]).filename()] = j;
  EXPECT_EQ(by["cut.jpg"]["status"], "error");
  EXPECT_NE(by["cut.jpg"]["error"].get<std::string>().find("libjpeg"), std::string::npos) << by["cut.jpg"].dump();
  EXPECT_EQ(by["good.jpg"]["status"], "ok");
  // Codec words never reach stderr unattributed: every line that has them names the file.
  std::istringstream lines(strict.out);
  for (std::string l; std::getline(lines, l);)
    if (l.find("JPEG") != std::string::npos && l.find("Corrupt") != std::string::npos) {
      EXPECT_NE(l.find("cut.jpg"), std::string::npos) << l;
    }
  const auto lenient = sh(vectorize(d / "lenient", (d / "list.txt").string(), "--engine none --lenient-decode"));
  EXPECT_EQ(lenient.rc, 0) << lenient.out;
  by.clear();
  for (const auto& j : lines_of(d / "lenient" / "manifest.jsonl")) by[fs::path(j["input"]).filename()] = j;
  EXPECT_EQ(by["cut.jpg"]["status"], "ok");
  EXPECT_FALSE(by["cut.jpg"].value("warning", "").empty()) << by["cut.jpg"].dump();
  EXPECT_FALSE(by["good.jpg"].contains("warning"));
  EXPECT_NE(lenient.out.find("1 inputs decoded with decoder warnings"), std::string::npos) << lenient.out;
  fs::remove_all(d);
}

TEST(StoreCli, ACutManifestLineIsRepairedAndEachInputWrittenOnce) {
  const fs::path d = tmpdir("cli_cut");
  ASSERT_EQ(sh(vectorize(d / "out", "synthetic:6", "--engine none --format shards --shard-rows 2")).rc, 0);
  const auto m = d / "out" / "manifest.jsonl";
  fs::resize_file(m, fs::file_size(m) - 10);  // a crash mid-append
  for (int run = 0; run < 2; ++run) {
    const auto r = sh(vectorize(d / "out", "synthetic:10", "--engine none --format shards --shard-rows 2"));
    ASSERT_EQ(r.rc, 0) << r.out;
    if (run == 0) {
      EXPECT_NE(r.out.find("cut a partial last line"), std::string::npos) << r.out;
    }
  }
  const auto n = line_counts(d / "out");
  EXPECT_EQ(n.size(), 10u);
  for (const auto& [k, c] : n) EXPECT_EQ(c, 1) << k;
  EXPECT_EQ(lines_of(m).size(), 10u);
  fs::remove_all(d);
}

TEST(StoreCli, DuplicateAndDifferentlySpelledListsSettleAfterOneRun) {
  const fs::path d = tmpdir("cli_spell");
  for (const char* p : {"home.jpg", "baboon.jpg", "fruits.jpg"}) copy_photo(p, d / "rel" / "img" / p);
  std::ofstream(d / "rel" / "list.txt") << "img/home.jpg\nimg/baboon.jpg\nimg/./home.jpg\nimg/fruits.jpg\n"
                                        << (d / "rel" / "img" / "baboon.jpg").string() << "\n";
  const fs::path out = d / "out";
  const std::string flags = " --out " + out.string() + " --engine none --format shards";
  const auto first = sh("cd " + d.string() + " && " + kExe + " vectorize --images rel/list.txt" + flags);
  ASSERT_EQ(first.rc, 0) << first.out;
  EXPECT_NE(first.out.find("2 duplicate inputs skipped"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("3 inputs (files), 3 to do"), std::string::npos) << first.out;
  // The default model's weights are synthetic, and the first line says so.
  EXPECT_NE(first.out.find("; model tf2015 (synthetic weights (seed 0): not Inception's trained features;"),
            std::string::npos)
      << first.out;
  for (const std::string& cmd : {"cd " + (d / "rel").string() + " && " + kExe + " vectorize --images list.txt" + flags,
                                 kExe + " vectorize --images " + (d / "rel" / "list.txt").string() + flags}) {
    const auto r = sh(cmd);
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("0 to do, 3 already done"), std::string::npos) << cmd << "\n" << r.out;
  }
  EXPECT_EQ(lines_of(out / "manifest.jsonl").size(), 3u);
  fs::remove_all(d);
}

TEST(StoreCli, CollidingAndOverLongNamesEachGetTheirOwnVector) {
  const fs::path d = tmpdir("cli_names");
  copy_photo("home.jpg", d / "rel" / "_up_" / "a.jpg");
  copy_photo("baboon.jpg", d / "rel" / "_up_" / "a.jpg.2");
  copy_photo("fruits.jpg", d / "a.jpg");
  const std::string long_name = std::string(247, 'n') + ".jpg";  // 251 bytes
  copy_photo("orange.jpg", d / "rel" / long_name);
  std::ofstream(d / "rel" / "list.txt") << "_up_/a.jpg\n_up_/a.jpg.2\n../a.jpg\n" << long_name << "\n";
  const auto r = sh(vectorize(d / "out", (d / "rel" / "list.txt").string(), "--format npy --batch 2"));
  ASSERT_EQ(r.rc, 0) << r.out;
  std::set<std::string> outputs;
  std::vector<std::vector<float>> vectors;
  for (const auto& j : lines_of(d / "out" / "manifest.jsonl")) {
    ASSERT_EQ(j["status"], "ok") << j.dump();
    EXPECT_TRUE(outputs.insert(j["output"].get<std::string>()).second) << "two inputs share " << j.dump();
    EXPECT_LE(fs::path(j["output"].get<std::string>()).filename().string().size(), 255u);
    vectors.push_back(npy::as_f32(npy::load(d / "out" / j["output"].get<std::string>())));
  }
  ASSERT_EQ(vectors.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t k = i + 1; k < 4; ++k) EXPECT_NE(vectors[i], vectors[k]) << "inputs " << i << " and " << k;
  const auto again = sh(vectorize(d / "out", (d / "rel" / "list.txt").string(), "--format npy"));
  EXPECT_NE(again.out.find("0 to do, 4 already done"), std::string::npos) << again.out;
  fs::remove_all(d);
}

TEST(StoreCli, ADecompressionBombIsRefusedBeforeDecoding) {
  const fs::path d = tmpdir("cli_bomb");
  // A 30000x30000 gray PNG of zeros: under 1 MB on disk, 2.7 GB decoded as RGB.
  const std::string py = R"(
import struct, sys, zlib
def chunk(t, b): return struct.pack(">I", len(b)) + t + b + struct.pack(">I", zlib.crc32(t + b) & 0xffffffff)
w = h = 30000
c = zlib.compressobj(9)
row = bytes(w + 1)
data = b"".join(c.compress(row) for _ in range(h)) + c.flush()
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
                              chunk(b"IDAT", data) + chunk(b"IEND", b""))
)";
  std::ofstream(d / "bomb.py") << py;
  ASSERT_EQ(sh(std::string(VECBENCH_PYTHON) + " " + (d / "bomb.py").string() + " " + (d / "bomb.png").string()).rc, 0);
  ASSERT_LT(fs::file_size(d / "bomb.png"), 2u << 20);
  copy_photo("home.jpg", d / "ok.jpg");
  std::ofstream(d / "list.txt") << "bomb.png\nok.jpg\n";
  const auto r = sh(vectorize(d / "out", (d / "list.txt").string(),
                              "--engine none --decode-threads 2 --json " + (d / "run.json").string()));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("30000x30000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("178956970"), std::string::npos) << r.out;
  const auto sample = nlohmann::json::parse(std::ifstream(d / "run.json"));
  EXPECT_LT(sample["peak_rss_bytes"].get<double>(), 1e9) << sample.dump();
  EXPECT_EQ(sample["images"], 1);
  // A smaller limit refuses an ordinary photo, naming its size.
  const auto small = sh(vectorize(d / "out2", (d / "ok.jpg").string(), "--engine none --max-pixels 1000"));
  EXPECT_EQ(small.rc, 2) << small.out;
  EXPECT_NE(small.out.find("image too large"), std::string::npos) << small.out;
  fs::remove_all(d);
}

TEST(StoreCli, BadOptionValuesAreRefusedNamingTheOption) {
  const fs::path d = tmpdir("cli_opts");
  struct Case {
    std::string args, name;
  };
  const std::string out = " --out " + (d / "out").string();
  for (const Case& c :
       {Case{"--images synthetic:2 --batch 0", "--batch"}, Case{"--images synthetic:2 --batch -1", "--batch"},
        Case{"--images synthetic:-5", "synthetic"}, Case{"--images synthetic:2 --exif bogus", "--exif"},
        Case{"--images synthetic:2 --threads -3", "--threads"}, Case{"--images synthetic:2 --prefetch 0", "--prefetch"},
        Case{"--images synthetic:2 --decode-threads 0", "--decode-threads"},
        Case{"--images synthetic:2 --warmup -1", "--warmup"},
        Case{"--images synthetic:2 --shard-rows 0", "--shard-rows"},
        Case{"--images synthetic:2 --format csv", "--format"},
        Case{"--images synthetic:2 --max-pixels 0", "--max-pixels"},
        Case{"--images synthetic:2 --devices cpu/100", "--force"}}) {
    const auto r = sh(kExe + " vectorize " + c.args + out);
    EXPECT_EQ(r.rc, 1) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.name), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(r.out.find("std::"), std::string::npos) << c.args << "\n" << r.out;
  }
  EXPECT_FALSE(fs::exists(d / "out" / "manifest.jsonl"));
  // compare: a broken file is "could not compare" (2), not a regression (1).
  std::ofstream(d / "broken.json") << "{";
  const auto cmp = sh(kExe + " compare " + (d / "broken.json").string() + " " + (d / "broken.json").string());
  EXPECT_EQ(cmp.rc, 2) << cmp.out;
  fs::remove_all(d);
}

TEST(StoreCli, KillNineAtRandomPointsThenARerunGivesEveryInputOnceAsACleanRun) {
  const fs::path d = tmpdir("cli_kill9");
  // The TorchScript engine on one replica, 3 rows a shard. Each kill lands at a random point of
  // the run's own progress: once the manifest has 1-9 more lines than before the run (a shard
  // just appended, the next being computed), so that it hits a live run with work left on a fast
  // or a loaded machine alike (fixed delays missed every run on a 2-core Zen 5, and delays scaled
  // to a clean run's time missed under parallel tests).
  const std::string flags =
      "--format shards --shard-rows 3 --batch 2 --warmup 0 --engine torchscript --strategy data-parallel --devices cpu";
  const std::string images = "synthetic:48";
  ASSERT_EQ(sh(vectorize(d / "clean", images, flags)).rc, 0);
  const auto clean = features_of(d / "clean");
  const fs::path manifest = d / "out" / "manifest.jsonl";
  auto lines_now = [&] {
    std::size_t n = 0;
    if (fs::exists(manifest)) for_each_manifest_line(manifest, [&](const ManifestLine&) { ++n; });
    return n;
  };
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> more(1, 9);
  int mid_run = 0;  // kills that hit a live process with work left
  for (int k = 0; k < 5; ++k) {
    const std::size_t target = lines_now() + static_cast<std::size_t>(more(rng));
    const std::string count = "$(cat " + manifest.string() + " 2>/dev/null | wc -l)";
    const auto r = sh("( " + vectorize(d / "out", images, flags) + " >/dev/null 2>&1 & pid=$!; while [ " + count +
                      " -lt " + std::to_string(target) +
                      " ] && kill -0 $pid 2>/dev/null; do sleep 0.02; done; kill -9 $pid 2>/dev/null && echo KILLED; "
                      "wait $pid )");
    const bool killed = r.out.find("KILLED") != std::string::npos;
    mid_run += killed && lines_now() < clean.size();
  }
  EXPECT_GE(mid_run, 2) << "the kills did not land mid-run; the test proves little";
  const auto r = sh(vectorize(d / "out", images, flags));
  ASSERT_EQ(r.rc, 0) << r.out;
  expect_same_features(features_of(d / "out"), clean);
  for (const auto& [k, n] : line_counts(d / "out")) EXPECT_EQ(n, 1) << k;
  fs::remove_all(d);
}

TEST(StoreCli, AFullDiskCountsItsUnwrittenOutputsAsFailedSaysSoAndARerunWithRoomCompletes) {
  // Issue #26, case 5: OUT on a filesystem that fills after a few .vc files (~51 KB each). The
  // summary said ok=12 failed=0 and the exit status was 0 although the manifest held the errors;
  // and the run went on decoding and computing every input it could no longer store.
  const fs::path d = tmpdir("cli_full");
  const fs::path mnt = d / "small";
  fs::create_directories(mnt);
  if (sh("mount -t tmpfs -o size=400k tmpfs " + mnt.string()).rc != 0) {
    fs::remove_all(d);
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root): the full-disk case is not run";
  }
  const fs::path out = mnt / "out";
  const std::string flags = "--engine none --format vc --progress 0";
  const auto r = sh(vectorize(out, "synthetic:12", flags));
  EXPECT_EQ(r.rc, 2) << r.out;  // some inputs failed
  std::size_t ok = 99, failed = 99;
  const auto at = r.out.find("vectorize images=12 ok=");
  ASSERT_NE(at, std::string::npos) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + at, "vectorize images=12 ok=%zu failed=%zu", &ok, &failed), 2) << r.out;
  EXPECT_GT(failed, 0u) << r.out;
  EXPECT_GT(ok, 0u) << r.out;
  EXPECT_LE(ok + failed, 12u) << r.out;
  // The first "No space left" stops the run: no more decoding and computing for nothing.
  EXPECT_NE(r.out.find("vecbench: stopped early: the disk is full ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(std::to_string(12 - ok - failed) + " of the 12 inputs to do were not started"),
            std::string::npos)
      << r.out;
  const auto said = r.out.find("vecbench: " + std::to_string(failed) + " outputs not written (");
  EXPECT_NE(said, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("write failed: No space left on device): counted as failed", said), std::string::npos) << r.out;
  std::size_t ok_lines = 0;
  for_each_manifest_line(out / "manifest.jsonl", [&](const ManifestLine& l) { ok_lines += l.ok(); });
  EXPECT_EQ(ok_lines, ok);
  // Room again: the rerun does the failed ones and ends with every input ok once.
  ASSERT_EQ(sh("mount -o remount,size=8m " + mnt.string()).rc, 0);
  const auto again = sh(vectorize(out, "synthetic:12", flags));
  EXPECT_EQ(again.rc, 0) << again.out;
  EXPECT_NE(again.out.find(std::to_string(12 - ok) + " to do, " + std::to_string(ok) + " already done"),
            std::string::npos)
      << again.out;
  std::size_t vc = 0;
  for (const auto& e : fs::directory_iterator(out)) vc += e.path().extension() == ".vc";
  EXPECT_EQ(vc, 12u);
  sh("umount " + mnt.string());
  fs::remove_all(d);
}

TEST(StoreCli, AnImageRewrittenUnderTheSameNameIsRedoneAndItsNewLineSupersedesTheOld) {
  // Issue #26, case 1: generated samples are rewritten every epoch under the same names. The rerun
  // said everything was done and served the old pictures' vectors, exit 0.
  const fs::path d = tmpdir("cli_identity");
  const std::vector<std::string> before = {"baboon.jpg", "fruits.jpg", "building.jpg", "apple.jpg"};
  const std::vector<std::string> after = {"board.jpg", "butterfly.jpg", "HappyFish.jpg", "blox.jpg"};
  auto place = [&](const fs::path& dir, const std::vector<std::string>& photos) {
    for (std::size_t i = 0; i < photos.size(); ++i)
      copy_photo(photos[i], dir / ("00000" + std::to_string(i + 1) + ".jpg"));
  };
  const fs::path samples = d / "samples", out = d / "out", fresh = d / "fresh";
  place(samples, before);
  const std::string flags = "--format shards --shard-rows 2 --progress 0";
  ASSERT_EQ(sh(vectorize(out, samples.string(), flags)).rc, 0);
  const auto old_features = features_of(out);
  for (const auto& j : lines_of(out / "manifest.jsonl")) {
    ASSERT_TRUE(j.contains("src")) << j.dump();
    EXPECT_EQ(j["src"]["size"], fs::file_size(j["input"].get<std::string>())) << j.dump();
  }
  place(samples, after);  // the next epoch: other pictures, same names
  const auto r = sh(vectorize(out, samples.string(), flags));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("4 to do, 0 already done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; 4 changed since their vectors were made (redone)"), std::string::npos) << r.out;
  const auto again = sh(vectorize(out, samples.string(), flags));
  EXPECT_NE(again.out.find("0 to do, 4 already done"), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("changed since"), std::string::npos) << again.out;
  // Two ok lines per input now, the newest last; merge keeps the newest, which must be the new
  // pictures' vectors, bit for bit those of a fresh folder.
  for (const auto& [input, n] : line_counts(out)) EXPECT_EQ(n, 2) << input;
  ASSERT_EQ(sh(kExe + " merge " + out.string()).rc, 0);
  ASSERT_EQ(sh(vectorize(fresh, samples.string(), flags)).rc, 0);
  const auto got = features_of(out), want = features_of(fresh);
  ASSERT_EQ(got.size(), 4u);
  for (const auto& [input, v] : got) {
    EXPECT_EQ(v, want.at(input)) << input;
    EXPECT_NE(v, old_features.at(input)) << input << ": still the old picture's vector";
  }
  // A store written before identities (no "src"): an input modified after its data was written
  // is the one sign left, and it is redone too.
  std::string lines;
  for (auto j : lines_of(out / "manifest.jsonl")) {
    j.erase("src");
    lines += j.dump() + "\n";
  }
  std::ofstream(out / "manifest.jsonl") << lines;
  const fs::path first = samples / "000001.jpg";
  fs::last_write_time(first, fs::file_time_type::clock::now() + std::chrono::hours(1));
  const auto legacy = sh(vectorize(out, samples.string(), flags));
  EXPECT_NE(legacy.out.find("1 to do, 3 already done"), std::string::npos) << legacy.out;
  EXPECT_NE(legacy.out.find("; 1 changed since their vectors were made"), std::string::npos) << legacy.out;
  fs::remove_all(d);
}

TEST(StoreCli, ACorruptedWeightsCacheIsRebuiltAndSaidNeverRunOn) {
  // Issue #26, case 2: 4 bytes flipped in the middle of the oneDNN engine's cached weights made
  // every later run of that model, into any OUT, write vectors ~1e19 too large, status ok, exit 0.
  const fs::path d = tmpdir("cli_weights_cache");
  const std::string env = "VECBENCH_WEIGHTS_DIR=" + (d / "w").string() + " ";
  const std::string flags = "--engine onednn --format npy --progress 0";
  const auto first = sh(env + vectorize(d / "a", "synthetic:3", flags));
  ASSERT_EQ(first.rc, 0) << first.out;
  std::vector<fs::path> caches;  // the weights file (not the packed-weights file beside it)
  for (const auto& e : fs::directory_iterator(d / "w"))
    if (e.path().string().find(".packed.") == std::string::npos) caches.push_back(e.path());
  ASSERT_EQ(caches.size(), 1u);
  {
    std::fstream f(caches[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(caches[0]) / 2));
    f.write("\xff\xff\x7f\x7f", 4);
  }
  const auto second = sh(env + vectorize(d / "b", "synthetic:3", flags));
  ASSERT_EQ(second.rc, 0) << second.out;
  EXPECT_NE(second.out.find("vecbench: weights cache " + caches[0].string() +
                            ": its payload checksum does not match (the file is corrupted): rebuilt from"),
            std::string::npos)
      << second.out;
  EXPECT_EQ(features_of(d / "b"), features_of(d / "a"));
  const auto third = sh(env + vectorize(d / "c", "synthetic:3", flags));  // the rebuilt cache checks out
  EXPECT_EQ(third.out.find("weights cache"), std::string::npos) << third.out;
  fs::remove_all(d);
}

TEST(StoreCli, AFileNameThatIsNotUtf8IsRecordedByteExactAndFoundDoneOnARerun) {
  // Issue #26, case 6: `latin1-\xe9\xff.png` (legal on Linux) went into the manifest with
  // replacement characters: the line named a file that does not exist, and every rerun did that
  // input again (one more ok line per rerun).
  const fs::path d = tmpdir("cli_latin1");
  const std::string odd = "latin1-\xe9\xff.png";
  copy_photo("box.png", d / "img" / odd);
  copy_photo("fruits.jpg", d / "img" / "plain.jpg");
  const std::string flags = "--engine none --format npy --progress 0";
  for (int run = 0; run < 3; ++run) {
    const auto r = sh(vectorize(d / "out", (d / "img").string(), flags));
    ASSERT_EQ(r.rc, 0) << r.out;
    if (run > 0) {
      EXPECT_NE(r.out.find("0 to do, 2 already done"), std::string::npos) << run << "\n" << r.out;
    }
  }
  const auto lines = lines_of(d / "out" / "manifest.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  int odd_lines = 0;
  for (const auto& j : lines) {
    ManifestLine l;
    ASSERT_TRUE(parse_manifest_line(j.dump(), l)) << j.dump();
    const std::string input = l.input;
    EXPECT_TRUE(fs::exists(input)) << j.dump();  // the line names the real file
    EXPECT_TRUE(fs::exists(d / "out" / j["output"].get<std::string>())) << j.dump();
    if (fs::path(input).filename() != odd) continue;
    ++odd_lines;
    EXPECT_TRUE(j.contains("input_hex")) << j.dump();
    EXPECT_TRUE(is_utf8(j["output"].get<std::string>())) << j.dump();
  }
  EXPECT_EQ(odd_lines, 1);
  fs::remove_all(d);
}

TEST(StoreCli, VerifyFindsRottenMissingAndCutVectorsAndRepairMakesTheNextRunRedoThem) {
  // Issue #26, case 4: one float of a shard overwritten with garbage (same size): a rerun said
  // everything was done and served it, and no command could check a store.
  const fs::path d = tmpdir("cli_verify");
  const std::string flags = "--engine none --format shards --shard-rows 4 --progress 0";
  ASSERT_EQ(sh(vectorize(d / "out", "synthetic:10", flags)).rc, 0);
  const auto clean = sh(kExe + " verify " + (d / "out").string());
  EXPECT_EQ(clean.rc, 0) << clean.out;
  EXPECT_NE(clean.out.find("10 vectors checked, 0 bad"), std::string::npos) << clean.out;
  for (const auto& j : lines_of(d / "out" / "manifest.jsonl")) EXPECT_EQ(j["xxh3"].get<std::string>().size(), 16u);
  const fs::path shard = d / "out" / "shard-00001.npy";  // rows of inputs 4..7
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(shard) - 2048 * 4 * 2 + 40));  // row 2, element 10
    f.write("\x12\x34\x56\x78", 4);
  }
  const auto rerun = sh(vectorize(d / "out", "synthetic:10", flags));
  EXPECT_NE(rerun.out.find("0 to do, 10 already done"), std::string::npos) << "a rerun checks sizes only";
  const auto rotten = sh(kExe + " verify " + (d / "out").string());
  EXPECT_EQ(rotten.rc, 2) << rotten.out;
  std::string victim;  // the input whose vector is row 2 of that shard (rows are in completion order)
  for (const auto& j : lines_of(d / "out" / "manifest.jsonl"))
    if (j["shard"] == "shard-00001.npy" && j["row"] == 2) victim = j["input"];
  EXPECT_NE(rotten.out.find("BAD " + victim + ": shard-00001.npy row 2: corrupted (checksum "), std::string::npos)
      << rotten.out;
  EXPECT_NE(rotten.out.find("10 vectors checked, 1 bad"), std::string::npos) << rotten.out;
  const auto repair = sh(kExe + " verify " + (d / "out").string() + " --repair");
  EXPECT_EQ(repair.rc, 2) << repair.out;
  EXPECT_NE(repair.out.find("repair: 1 files moved to "), std::string::npos) << repair.out;
  EXPECT_FALSE(fs::exists(shard));
  const auto redo = sh(vectorize(d / "out", "synthetic:10", flags));
  EXPECT_NE(redo.out.find("4 to do, 6 already done"), std::string::npos) << redo.out;  // the shard's 4 rows
  EXPECT_EQ(sh(kExe + " verify " + (d / "out").string()).rc, 0);
  // A vector file missing or cut short is named too.
  ASSERT_EQ(sh(vectorize(d / "npy", "synthetic:3", "--engine none --format npy --progress 0")).rc, 0);
  fs::remove(d / "npy" / "synthetic:1.npy");
  fs::resize_file(d / "npy" / "synthetic:2.npy", 100);
  const auto gone = sh(kExe + " verify " + (d / "npy").string());
  EXPECT_EQ(gone.rc, 2) << gone.out;
  EXPECT_NE(gone.out.find("BAD synthetic:1: synthetic:1.npy: missing"), std::string::npos) << gone.out;
  EXPECT_NE(gone.out.find("BAD synthetic:2: synthetic:2.npy: truncated"), std::string::npos) << gone.out;
  fs::remove_all(d);
}

TEST(StoreCli, HashInputsLetsTheContentDecideWhatChanged) {
  // `--hash-inputs`: a file rewritten in place with its old size and mtime (same inode) has the
  // same stat identity, so only its content can tell; a file touched but unchanged is not redone.
  const fs::path d = tmpdir("cli_hash_inputs");
  fs::create_directories(d / "img");
  const fs::path img = d / "img" / "a.ppm";
  {
    std::ofstream f(img, std::ios::binary);
    f << "P6\n64 64\n255\n";
    for (int i = 0; i < 64 * 64 * 3; ++i) f.put(static_cast<char>(i * 7 % 251));
  }
  const std::string flags = "--engine none --format npy --progress 0 --hash-inputs";
  ASSERT_EQ(sh(vectorize(d / "out", img.string(), flags)).rc, 0);
  const auto line = lines_of(d / "out" / "manifest.jsonl").at(0);
  ASSERT_EQ(line["src"]["xxh3"].get<std::string>().size(), 16u) << line.dump();
  // Touched, content unchanged: the content decides, nothing to redo (the line keeps its mtime).
  const auto mtime = fs::last_write_time(img);
  fs::last_write_time(img, mtime + std::chrono::hours(1));
  const auto touched = sh(vectorize(d / "out", img.string(), flags));
  EXPECT_NE(touched.out.find("0 to do, 1 already done"), std::string::npos) << touched.out;
  // Rewritten in place (same inode and size), the recorded mtime put back: only the hash sees it.
  {
    std::fstream f(img, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.write("\x01\x02\x03", 3);
  }
  fs::last_write_time(img, mtime);
  const auto plain = sh(vectorize(d / "out", img.string(), "--engine none --format npy --progress 0"));
  EXPECT_NE(plain.out.find("0 to do, 1 already done"), std::string::npos)
      << "without --hash-inputs the stat identity cannot see it\n"
      << plain.out;
  const auto hashed = sh(vectorize(d / "out", img.string(), flags));
  EXPECT_NE(hashed.out.find("1 to do, 0 already done"), std::string::npos) << hashed.out;
  EXPECT_NE(hashed.out.find("1 changed since their vectors were made"), std::string::npos) << hashed.out;
  fs::remove_all(d);
}
