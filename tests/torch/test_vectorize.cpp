// The vectorizer end to end on the real (synthetic-weight) model: features equal an independent
// Python/NumPy reference on real photos, all strategies agree, and `vecbench vectorize` handles
// bad inputs, resume, output formats and hostile paths.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include "build_paths.hpp"
#include "vecbench/core/system/subprocess.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/input/inputs.hpp"
#include "vecbench/output/writer.hpp"
#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/fifo_gate.hpp"
#include "vecbench/testing/rel_l2.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;
using vecbench::testing::rel_l2;

namespace {

const std::string kModel = VECBENCH_DEFAULT_MODEL;
const std::string kPhotos = "/usr/share/doc/opencv-doc/examples/data";

inline fs::path tmpdir(const std::string& name) { return vecbench::testing::fresh_temp_dir(name); }

std::vector<std::string> some_photos(std::size_t n) {
  std::vector<std::string> v;
  for (const char* f :
       {"lena.jpg", "baboon.jpg", "fruits.jpg", "building.jpg", "messi5.jpg", "box.png", "HappyFish.jpg", "orange.jpg"})
    if (fs::exists(fs::path(kPhotos) / f) && v.size() < n) v.push_back((fs::path(kPhotos) / f).string());
  return v;
}

struct Cmd {
  int rc;
  std::string out;
};
/// Runs `cmd` through the shell; stdout and stderr together.
Cmd run(const std::string& cmd) {
  const CommandResult r = run_command(cmd, Stderr::merge);
  return {r.exit_code, r.output};
}

std::unique_ptr<MemorySink> features(const ImageSource& src, const std::string& strategy, const std::string& devices,
                                     int batch, int threads) {
  auto sink = std::make_unique<MemorySink>(src.size());
  DeviceOptions o;
  o.threads_per_replica = threads;
  RunSettings s;
  s.batch_size = batch;
  s.warmup_batches = 1;
  ModelSettings mo;
  mo.path = kModel;
  run_strategy(strategy, src, all_indices(src.size()), expand_devices(devices, o), model_factory(mo), *sink, s, 299);
  return sink;
}

}  // namespace

TEST(Model, MetaIsStoredAndPrinted) {
  const auto meta = read_model_meta(kModel);
  EXPECT_EQ(meta.value("arch", ""), "tf2015");
  EXPECT_EQ(meta.value("weight_source", ""), "seed:0");
  EXPECT_EQ(meta.value("weight_sha256", "").size(), 64u);
  const auto r = run(std::string(VECBENCH_EXE) + " model info --model " + kModel);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("tf2015"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(meta.value("weight_sha256", "")), std::string::npos) << r.out;
  EXPECT_THROW(read_model_meta("/nonexistent/model.pt"), IoError);
}

TEST(Features, EqualIndependentNumpyReferenceOnRealPhotos) {
  const auto photos = some_photos(5);
  ASSERT_GE(photos.size(), 3u) << "opencv-doc photos missing (apt-get install opencv-doc)";
  const fs::path d = tmpdir("npref");
  std::ofstream list(d / "list.txt");
  for (const auto& p : photos) list << p << "\n";
  list.close();
  for (const std::string mode : {"tf-legacy", "bilinear"}) {
    std::string cmd = std::string(VECBENCH_PYTHON) + " " + VECBENCH_SOURCE_DIR + "/tests/py/np_reference.py " + kModel +
                      " " + (d / "ref.npy").string() + " --resize " + mode;
    for (const auto& p : photos) cmd += " " + p;
    const auto r = run(cmd);
    ASSERT_EQ(r.rc, 0) << r.out;
    const auto ref = npy::as_f32(npy::load(d / "ref.npy"));
    ASSERT_EQ(ref.size(), photos.size() * 2048);
    InputOptions in;
    in.resize = parse_resize_mode(mode);
    auto src = make_source((d / "list.txt").string(), in);
    const auto got_p = features(*src, "sequential", "cpu", 1, 1);
    const MemorySink& got = *got_p;
    for (std::size_t i = 0; i < photos.size(); ++i) {
      ASSERT_EQ(got.features(i).size(), 2048u) << got.error(i);
      const double e = rel_l2(got.features(i).data(), ref.data() + i * 2048, 2048);
      EXPECT_LE(e, 1e-4) << mode << " " << photos[i];
    }
  }
  fs::remove_all(d);
}

TEST(Features, AreO1NotHuge) {
  SyntheticSource src(2);
  const auto got_p = features(src, "sequential", "cpu", 2, 2);
  const MemorySink& got = *got_p;
  double sum = 0;
  for (float v : got.features(0)) {
    ASSERT_TRUE(std::isfinite(v));
    sum += std::fabs(v);
  }
  const double mean = sum / 2048;
  EXPECT_GT(mean, 1e-3);
  EXPECT_LT(mean, 100.0);
}

TEST(Strategies, BitIdenticalOnCpuWithSameThreadsPerReplica) {
  const auto photos = some_photos(6);
  ImageList l;
  l.paths = photos;
  FileSource src(l, ResizeMode::tf_legacy);
  const auto ref_p = features(src, "sequential", "cpu", 1, 1);
  const MemorySink& ref = *ref_p;
  for (const std::string s : {"naive", "sharded", "data-parallel", "mirrored"}) {
    const auto got_p = features(src, s, "cpu/2", 1, 1);
    const MemorySink& got = *got_p;
    for (std::size_t i = 0; i < src.size(); ++i) {
      ASSERT_EQ(got.times_seen(i), 1) << s;
      EXPECT_EQ(got.features(i), ref.features(i)) << s << " image " << i;
    }
  }
}

TEST(Vectorize, BadInputsAreReportedAndTheRunGoesOn) {
  const fs::path d = tmpdir("bad");
  const fs::path in = d / "in";
  fs::create_directories(in);
  const auto photos = some_photos(2);
  fs::copy_file(photos[0], in / "good.jpg");
  std::ofstream(in / "empty.jpg").close();
  std::ofstream(in / "text.png") << "this is text";
  {
    std::ifstream g(photos[1], std::ios::binary);
    std::string b((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>());
    std::ofstream(in / "cut.jpg", std::ios::binary) << b.substr(0, b.size() / 3);
  }
  std::ofstream(in / "junk.bmp") << "BM garbage garbage";
  std::ofstream list(d / "list.txt");
  list << "in/good.jpg\nin/empty.jpg\nin/text.png\nin/cut.jpg\nin/junk.bmp\nin/missing.jpg\n";
  list.close();
  const auto r = run(std::string(VECBENCH_EXE) + " vectorize --images " + (d / "list.txt").string() + " --out " +
                     (d / "out").string() + " --format npy --warmup 0");
  EXPECT_EQ(r.rc, 2) << r.out;  // some failed
#ifdef VECBENCH_WITH_OPENCV
  const char* bmp = "junk.bmp: corrupt";
#else
  const char* bmp = "junk.bmp: cannot decode BMP here: this vecbench was built without OpenCV";
#endif
  for (const char* s :
       {"empty.jpg: empty file", "text.png: not an image", "cut.jpg: truncated JPEG", bmp, "missing.jpg: no such file"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  EXPECT_TRUE(fs::exists(d / "out" / "in" / "good.jpg.npy"));
  std::ifstream m(d / "out" / "manifest.jsonl");
  std::string line;
  int ok = 0, err = 0;
  while (std::getline(m, line)) {
    auto j = nlohmann::json::parse(line);
    (j["status"] == "ok" ? ok : err)++;
    if (j["status"] == "error") {
      EXPECT_FALSE(j["error"].get<std::string>().empty());
    }
  }
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(err, 5);
  fs::remove_all(d);
}

TEST(Vectorize, VcAndNpyRoundTripToTheSameValues) {
  const fs::path d = tmpdir("formats");
  const auto photos = some_photos(3);
  std::ofstream list(d / "list.txt");
  for (const auto& p : photos) list << p << "\n";
  list.close();
  for (const std::string f : {"vc", "npy", "shards"}) {
    const auto r = run(std::string(VECBENCH_EXE) + " vectorize --images " + (d / "list.txt").string() + " --out " +
                       (d / f).string() + " --format " + f + " --strategy sequential --warmup 0 --shard-rows 2");
    ASSERT_EQ(r.rc, 0) << r.out;
  }
  // Names: absolute input paths outside the list's folder are mapped inside the output folder.
  for (const auto& p : photos) {
    const fs::path rel = safe_relative_name(p, d);
    const auto vc = read_vc(d / "vc" / (rel.string() + ".vc"));
    const auto np = npy::as_f32(npy::load(d / "npy" / (rel.string() + ".npy")));
    ASSERT_EQ(vc.size(), 2048u);
    ASSERT_EQ(np.size(), 2048u);
    for (std::size_t k = 0; k < 2048; ++k) ASSERT_EQ(vc[k], np[k]) << p << " " << k;  // %.18e is exact
  }
  // Shards: 3 rows over shard-00000 (2 rows) and shard-00001 (1 row), found through the manifest.
  std::ifstream m(d / "shards" / "manifest.jsonl");
  std::string line;
  int rows = 0;
  while (std::getline(m, line)) {
    const auto j = nlohmann::json::parse(line);
    const auto shard = npy::load(d / "shards" / j["shard"].get<std::string>());
    ASSERT_EQ(shard.shape[1], 2048u);
    const auto all = npy::as_f32(shard);
    const std::size_t row = j["row"];
    const fs::path rel = safe_relative_name(j["input"].get<std::string>(), d);
    const auto np = npy::as_f32(npy::load(d / "npy" / (rel.string() + ".npy")));
    for (std::size_t k = 0; k < 2048; ++k) ASSERT_EQ(all[row * 2048 + k], np[k]);
    ++rows;
  }
  EXPECT_EQ(rows, 3);
  fs::remove_all(d);
}

namespace {
/// `n` photo inputs in `dir` (in100.jpg, in101.jpg, ...) listed in order in `dir`/list.txt, the
/// `gate`-th a FIFO (fifo_gate.hpp): a run cannot get past it until the test feeds it.
fs::path photo_list_with_a_gate(const fs::path& dir, std::size_t n, std::size_t gate) {
  const auto photos = some_photos(8);
  std::ofstream list(dir / "list.txt");
  for (std::size_t i = 0; i < n; ++i) {
    const fs::path from = photos.at(i % photos.size());
    const std::string name = "in" + std::to_string(100 + i) + (i == gate ? ".jpg" : from.extension().string());
    if (i == gate)
      EXPECT_TRUE(vecbench::testing::make_fifo(dir / name)) << std::strerror(errno);
    else
      fs::copy_file(from, dir / name);
    list << name << "\n";
  }
  return dir / "list.txt";
}
std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST(Vectorize, ResumeAfterAnInterruptedRun) {
  const fs::path d = tmpdir("resume");
  // 40 inputs, the 21st a FIFO the run cannot read past: the kill lands mid-run by construction,
  // once some outputs exist, however fast or loaded the machine is.
  const std::size_t n_inputs = 40, gate = 20;
  const fs::path list = photo_list_with_a_gate(d, n_inputs, gate);
  const std::string base = std::string(VECBENCH_EXE) + " vectorize --images " + list.string() + " --out " +
                           (d / "out").string() + " --format npy --strategy sequential --warmup 0 --batch 4";
  // Kill the first run once some outputs exist (SIGKILL: no chance to clean up); 120 s: a guard.
  const std::string killer = "( " + base + " & pid=$!; for i in $(seq 1 2400); do n=$(find " + (d / "out").string() +
                             " -name '*.npy' 2>/dev/null | grep -vc '\\.tmp\\.'); if [ \"$n\" -ge 2 ]; then break; fi; "
                             "sleep 0.05; done; kill -9 $pid; wait $pid )";
  run(killer);
  std::size_t done_before = 0;
  for (const auto& e : fs::recursive_directory_iterator(d / "out")) {
    const std::string n = e.path().filename().string();
    if (n.find(".tmp.") != std::string::npos) continue;  // a temp file may be left; never a partial .npy
    if (e.path().extension() == ".npy") {
      EXPECT_EQ(npy::load(e.path()).count(), 2048u) << n;  // every visible output is complete
      ++done_before;
    }
  }
  ASSERT_GE(done_before, 2u);
  ASSERT_LT(done_before, n_inputs);                              // the FIFO's input at least was left
  fs::remove(d / ("in" + std::to_string(100 + gate) + ".jpg"));  // now a plain file: the rerun reads it
  fs::copy_file(some_photos(1).at(0), d / ("in" + std::to_string(100 + gate) + ".jpg"));
  // Done = a manifest line and its complete file (a file renamed into place just before the kill,
  // whose line was not yet appended, is redone).
  std::size_t lines_before = 0;
  {
    std::ifstream m(d / "out" / "manifest.jsonl");
    for (std::string l; std::getline(m, l);) lines_before += !l.empty() && l.back() == '}';
  }
  EXPECT_LE(lines_before, done_before);
  EXPECT_GE(lines_before + 1, done_before);
  const auto r = run(base);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("skipped=" + std::to_string(lines_before)), std::string::npos) << r.out;
  std::size_t after = 0;
  for (const auto& e : fs::recursive_directory_iterator(d / "out")) {
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "stale temp file left";
    after += e.path().extension() == ".npy";
  }
  EXPECT_EQ(after, n_inputs);
  fs::remove_all(d);
}

TEST(Vectorize, OutputNamesNeverEscapeTheOutputDirectory) {
  EXPECT_EQ(safe_relative_name("../../etc/passwd", "/data").string(), "_up_/_up_/etc/passwd");
  EXPECT_EQ(safe_relative_name("/etc/passwd", "/data").string(), "etc/passwd");
  EXPECT_EQ(safe_relative_name("/data/a/b.jpg", "/data").string(), "a/b.jpg");
  EXPECT_EQ(safe_relative_name("/data/../x.jpg", "/data").string(), "x.jpg");
  EXPECT_EQ(safe_relative_name("~/x.jpg", "").string(), "_up_/x.jpg");
  EXPECT_EQ(safe_relative_name("/", "").string(), "_");
  const fs::path d = tmpdir("escape");
  fs::create_directories(d / "lists");
  fs::copy_file(fs::path(kPhotos) / "fruits.jpg", d / "pic.jpg");
  std::ofstream(d / "lists" / "l.txt") << "../pic.jpg\n" << (d / "pic.jpg").string() << "\n";
  const auto r = run(std::string(VECBENCH_EXE) + " vectorize --images " + (d / "lists" / "l.txt").string() + " --out " +
                     (d / "out").string() + " --format npy --warmup 0 --strategy sequential");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(d / "out"))
    if (e.path().extension() == ".npy") {
      ++n;
      const auto rel = e.path().lexically_relative(d / "out");
      EXPECT_NE(*rel.begin(), "..");
    }
  EXPECT_EQ(n, 1u);  // both lines name one file: one input (canonical path), done once
  EXPECT_NE(r.out.find("1 duplicate inputs skipped"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(d / "pic.jpg.npy"));
  fs::remove_all(d);
}

TEST(Vectorize, CtrlCDrainsFlushesAndResumes) {
  const fs::path d = tmpdir("sigint");
  // 60 inputs, the 31st a FIFO: the run cannot finish before the interrupt, whatever the machine.
  const fs::path list = photo_list_with_a_gate(d, 60, 30);
  const fs::path gate = d / "in130.jpg";
  const std::string bytes = file_bytes(some_photos(1).at(0));
  const std::string base =
      std::string(VECBENCH_EXE) + " vectorize --images " + list.string() + " --out " + (d / "out").string() +
      " --format shards --shard-rows 4 --strategy data-parallel --devices cpu/2 --warmup 1 --batch 2";
  // SIGINT once the first shard exists: the run stops taking new batches, finishes what is in
  // flight (the FIFO's batch too, if a decoder has it: the test feeds it then), flushes the
  // partial shard and exits 130.
  std::atomic<bool> ended{false};
  Cmd r{};
  std::thread t([&] {
    r = run("( " + base + " & echo $! > " + (d / "pid").string() + "; wait $!; echo rc=$? )");
    ended = true;
  });
  const auto is_over = [&] { return ended.load(); };
  long pid = 0;
  const bool started = vecbench::testing::wait_until(
      [&] { return fs::exists(d / "out" / "shard-00000.npy") && (std::ifstream(d / "pid") >> pid) && pid > 0; },
      is_over);
  EXPECT_TRUE(started) << "no first shard";
  if (started) ::kill(static_cast<pid_t>(pid), SIGINT);
  vecbench::testing::feed_fifo(gate, bytes, is_over);  // no reader when its batch was never taken
  t.join();
  ASSERT_NE(r.out.find("rc=130"), std::string::npos) << r.out;
  ASSERT_NE(r.out.find("(interrupted)"), std::string::npos) << r.out;
  std::size_t rows = 0;
  {
    std::ifstream m(d / "out" / "manifest.jsonl");
    std::string line;
    while (std::getline(m, line)) {
      const auto j = nlohmann::json::parse(line);
      const auto shard = npy::load(d / "out" / j["shard"].get<std::string>());  // every listed shard exists
      EXPECT_LT(j["row"].get<std::size_t>(), shard.shape[0]);
      ++rows;
    }
  }
  ASSERT_GT(rows, 0u);
  ASSERT_LT(rows, 60u);
  // The rerun reads the FIFO's input unless the first run stored it: fed again when it does.
  std::atomic<bool> again_ended{false};
  Cmd again{};
  std::thread t2([&] {
    again = run(base);
    again_ended = true;
  });
  vecbench::testing::feed_fifo(gate, bytes, [&] { return again_ended.load(); });
  t2.join();
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_NE(again.out.find("skipped=" + std::to_string(rows)), std::string::npos) << again.out;
  std::set<std::string> inputs;
  std::ifstream m(d / "out" / "manifest.jsonl");
  std::string line;
  while (std::getline(m, line))
    EXPECT_TRUE(inputs.insert(nlohmann::json::parse(line)["input"].get<std::string>()).second);
  EXPECT_EQ(inputs.size(), 60u);  // every input exactly once
  fs::remove_all(d);
}

TEST(Model, FusedPrepackedExportGivesTheSameFeatures) {
  // tools/export_inception.py --fuse prepacked (built next to the default model): conv+BN+ReLU as
  // prepacked oneDNN convolutions, channels_last; same features within 1e-4, any batch size.
  const std::string fused = std::string(VECBENCH_DEFAULT_FUSED_MODEL);
  const auto meta = read_model_meta(fused);
  EXPECT_EQ(meta.value("fuse", ""), "prepacked");
  EXPECT_FALSE(meta.value("optimize_after_load", true));
  SyntheticSource src(5);
  const auto ref = features(src, "sequential", "cpu", 1, 1);
  for (int batch : {1, 3}) {
    auto sink = std::make_unique<MemorySink>(src.size());
    RunSettings s;
    s.batch_size = batch;
    s.warmup_batches = 1;
    ModelSettings mo;
    mo.path = fused;
    run_strategy("data-parallel", src, all_indices(src.size()), expand_devices("cpu/2"), model_factory(mo), *sink, s,
                 299);
    for (std::size_t i = 0; i < src.size(); ++i) {
      ASSERT_EQ(sink->features(i).size(), 2048u) << sink->error(i);
      EXPECT_LE(rel_l2(sink->features(i).data(), ref->features(i).data(), 2048), 1e-4)
          << "batch " << batch << " image " << i;
    }
  }
}

TEST(Tune, PrintsTheWinningCommandLineAndSavesAProfileTheNextRunUsesAndNames) {
  const fs::path d = tmpdir("tune");
  const std::string env = "VECBENCH_PROFILE_DIR=" + (d / "profiles").string() + " ";
  const auto r =
      run(env + VECBENCH_EXE + " tune --images synthetic:4 --budget 12 --save --results " + d.string() + " 2>&1");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto at = r.out.find("best: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vecbench vectorize --images synthetic:4 --out OUT --model ", at), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--strategy ", at), std::string::npos);
  EXPECT_TRUE(fs::exists(d / "tune"));
  const auto saved = r.out.find("saved profile ");
  ASSERT_NE(saved, std::string::npos) << r.out;
  const std::string path = r.out.substr(saved + 14, r.out.find(' ', saved + 14) - saved - 14);
  EXPECT_EQ(fs::path(path).parent_path(), d / "profiles") << path;
  ASSERT_TRUE(fs::exists(path)) << path;
  const auto v = run(env + VECBENCH_EXE + " vectorize --images synthetic:2 --format none --progress 0 --out " +
                     (d / "out").string() + " 2>&1");
  ASSERT_EQ(v.rc, 0) << v.out;
  EXPECT_NE(v.out.find("(route from profile " + path + ")"), std::string::npos) << v.out;
  fs::remove_all(d);
}

TEST(EngineNone, MeasuresTheInputPipelineAloneOnRealPhotos) {
  // the decode ceiling: real JPEGs decoded and resized, no network, zero features
  const fs::path d = tmpdir("engine_none");
  const auto photos = some_photos(4);
  ASSERT_EQ(photos.size(), 4u) << "opencv-doc photos missing (apt-get install opencv-doc)";
  {
    std::ofstream list(d / "list.txt");
    for (const auto& p : photos) list << p << "\n";
  }
  const auto r = run(std::string(VECBENCH_EXE) + " vectorize --engine none --images " + (d / "list.txt").string() +
                     " --format npy --out " + (d / "out").string() + " --devices cpu/2");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("ok=4 failed=0"), std::string::npos) << r.out;
  std::size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(d / "out"))
    if (e.path().extension() == ".npy") {
      const auto v = npy::as_f32(npy::load(e.path()));
      ASSERT_EQ(v.size(), 2048u);
      EXPECT_EQ(*std::max_element(v.begin(), v.end()), 0.0f);
      ++files;
    }
  EXPECT_EQ(files, 4u);
  fs::remove_all(d);
}
