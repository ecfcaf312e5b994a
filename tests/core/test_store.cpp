// The output folder as a store (no LibTorch, no OpenCV): one writer (lock), one fingerprint,
// manifests repaired on open, outputs checked before they count as done, names unique by
// construction, inputs keyed by canonical path, merge never mixing fingerprints; the progress
// display of a long run.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <streambuf>
#include <thread>

#include "vecbench/app/merge.hpp"
#include "vecbench/core/files/sha256.hpp"
#include "vecbench/core/files/zip_member.hpp"
#include "vecbench/output/writer.hpp"
#include "vecbench/pipeline/progress.hpp"
#include "vecbench/results/compare.hpp"
#include "vecbench/testing/named_source.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;

namespace {
fs::path store_dir(const std::string& name) { return vecbench::testing::fresh_temp_dir(name); }

using vecbench::testing::NamedSource;

Fingerprint fingerprint(const std::string& resize = "tf-legacy", const std::string& sha = "aa") {
  FingerprintFields f;
  f.model_sha256 = sha;
  f.model_arch = "tf2015";
  f.resize = resize;
  f.exif = "ignore";
  f.arithmetic = "fp32";
  f.feature_dim = 4;
  return make_fingerprint(f);
}

WriterOptions options(const fs::path& d, OutputFormat format, const Fingerprint& fp = fingerprint()) {
  WriterOptions o;
  o.format = format;
  o.out_dir = d;
  o.quiet = true;
  o.fingerprint = fp;
  o.feature_dim = 4;
  o.shard_rows = 2;
  static std::ostringstream sink;
  o.log = &sink;
  return o;
}

std::vector<nlohmann::json> lines(const fs::path& f) { return vecbench::testing::read_jsonl(f); }

void write_all(OutputWriter& w, const std::vector<std::size_t>& idx) {
  for (std::size_t i : idx) {
    const float f[4] = {static_cast<float>(i), 1, 2, 3};
    w.on_features(i, f, 4);
  }
  w.finish();
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string(1000, 'a')), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(Fingerprint, TfJpegDecodeIsItsOwnFingerprintAndExactKeepsTheOldFields) {
  FingerprintFields f;
  f.model_sha256 = "aa";
  f.resize = "tf-legacy";
  f.exif = "ignore";
  f.arithmetic = "fp32";
  const Fingerprint exact = make_fingerprint(f);
  EXPECT_FALSE(exact.fields.contains("decode"));  // folders written before --decode keep their id
  f.jpeg_decoder = JpegDecoder::tf;
  const Fingerprint tf = make_fingerprint(f);
  EXPECT_EQ(tf.fields.value("decode", ""), "tf");
  EXPECT_NE(tf.id(), exact.id());
  const auto diff = fingerprint_diff(exact.fields, tf.fields);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_EQ(diff[0].rfind("decode: (none) in the folder vs \"tf\"", 0), 0u) << diff[0];
  EXPECT_EQ(parse_jpeg_decoder("tf"), JpegDecoder::tf);
  EXPECT_THROW(parse_jpeg_decoder("turbo"), ConfigError);
}

TEST(Store, ASecondWriterIsRefusedNamingTheHolderAndTouchesNothing) {
  const fs::path d = store_dir("lock");
  SyntheticSource src(4);
  OutputWriter a(src, options(d, OutputFormat::shards));
  write_all(a, {0, 1});
  const std::string before = slurp(d / "manifest.jsonl");
  try {
    OutputWriter b(src, options(d, OutputFormat::shards));
    FAIL() << "a second writer was let in";
  } catch (const OutputFolderError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("pid " + std::to_string(::getpid())), std::string::npos) << m;
    EXPECT_NE(m.find(host_name()), std::string::npos) << m;
  }
  // A rank of a multi-process job is refused too, and while ranks write, a one-process run is.
  EXPECT_THROW(
      {
        auto o = options(d, OutputFormat::shards);
        o.rank = 0;
        OutputWriter r(src, o);
      },
      OutputFolderError);
  EXPECT_EQ(slurp(d / "manifest.jsonl"), before);
  EXPECT_TRUE(fs::exists(d / "shard-00000.npy"));
  EXPECT_FALSE(fs::exists(d / "shard-00001.npy"));

  const fs::path e = store_dir("lock_ranks");
  auto r0 = options(e, OutputFormat::shards);
  r0.rank = 0;
  OutputWriter rank0(src, r0);
  auto r1 = r0;
  r1.rank = 1;
  OutputWriter rank1(src, r1);  // ranks share the folder
  try {
    OutputWriter single(src, options(e, OutputFormat::shards));
    FAIL() << "a one-process writer ran beside ranks";
  } catch (const OutputFolderError& x) {
    EXPECT_NE(std::string(x.what()).find("multi-process job"), std::string::npos) << x.what();
  }
  EXPECT_THROW(OutputWriter(src, r1), OutputFolderError);  // rank 1 twice
  fs::remove_all(d);
  fs::remove_all(e);
}

TEST(Store, TheLockGoesWithAKilledProcess) {
  const fs::path d = store_dir("lock_kill");
  SyntheticSource src(2);
  const pid_t child = ::fork();
  if (child == 0) {
    OutputWriter w(src, options(d, OutputFormat::npy));
    ::pause();
    ::_exit(0);
  }
  for (int i = 0; i < 200 && !fs::exists(d / "vecbench.json"); ++i) ::usleep(10000);
  ::usleep(50000);
  EXPECT_THROW(OutputWriter(src, options(d, OutputFormat::npy)), OutputFolderError);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  OutputWriter w(src, options(d, OutputFormat::npy));  // no stale lock
  EXPECT_EQ(w.pending().size(), 2u);
  fs::remove_all(d);
}

TEST(Store, AnotherFingerprintIsRefusedNamingTheFieldsUnlessReplaced) {
  const fs::path d = store_dir("fp");
  SyntheticSource src(3);
  {
    OutputWriter w(src, options(d, OutputFormat::npy));
    write_all(w, {0, 1, 2});
  }
  const std::string before = slurp(d / "manifest.jsonl");
  for (const auto& m : lines(d / "manifest.jsonl")) EXPECT_EQ(m["fp"], fingerprint().id());
  try {
    OutputWriter w(src, options(d, OutputFormat::npy, fingerprint("bilinear", "bb")));
    FAIL() << "resumed under another fingerprint";
  } catch (const OutputFolderError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("resize: \"tf-legacy\" in the folder vs \"bilinear\" for this run"), std::string::npos) << m;
    EXPECT_NE(m.find("model_sha256"), std::string::npos) << m;
    EXPECT_EQ(m.find("exif"), std::string::npos) << m;  // only the differing fields
    EXPECT_NE(m.find("--replace-fingerprint"), std::string::npos) << m;
    EXPECT_NE(m.find("new --out"), std::string::npos) << m;
  }
  EXPECT_EQ(slurp(d / "manifest.jsonl"), before);  // nothing written
  auto o = options(d, OutputFormat::npy, fingerprint("bilinear", "bb"));
  o.replace_fingerprint = true;
  {
    OutputWriter w(src, o);
    EXPECT_EQ(w.pending().size(), 3u);  // everything redone under the new fingerprint
    write_all(w, {0, 1, 2});
  }
  EXPECT_EQ(read_store_fingerprint(d).id(), fingerprint("bilinear", "bb").id());
  int superseded = 0;
  for (const auto& e : fs::directory_iterator(d))
    if (e.path().filename().string().rfind("superseded-" + fingerprint().id(), 0) == 0) {
      ++superseded;
      EXPECT_EQ(slurp(e.path() / "manifest.jsonl"), before);  // the old vectors kept, aside
      EXPECT_TRUE(fs::exists(e.path() / "synthetic:0.npy"));
    }
  EXPECT_EQ(superseded, 1);
  for (const auto& m : lines(d / "manifest.jsonl")) EXPECT_EQ(m["fp"], fingerprint("bilinear", "bb").id());
  fs::remove_all(d);
}

TEST(Store, AFolderOfAnotherFingerprintThatHoldsNoVectorIsTakenOverBySoleWriterOnly) {
  // A run whose replicas failed to build (a model or calibration that did not check out) leaves
  // OUT's fingerprint and an empty or error-only manifest: the next run, with fixed settings, may
  // not be refused as if vectors were there. MPI ranks (shared lock) still refuse.
  const fs::path d = store_dir("fp_vectorless");
  SyntheticSource src(2);
  { OutputWriter w(src, options(d, OutputFormat::npy)); }  // wrote nothing
  {
    OutputWriter w(src, options(d, OutputFormat::npy));
    w.on_error(0, "unreadable");  // an error line names no output
    w.finish();
  }
  ASSERT_TRUE(fs::exists(d / "vecbench.json"));
  auto rank = options(d, OutputFormat::npy, fingerprint("bilinear", "bb"));
  rank.rank = 0;
  EXPECT_THROW(OutputWriter(src, rank), OutputFolderError) << "a rank took over a folder it shares";
  EXPECT_EQ(read_store_fingerprint(d).id(), fingerprint().id());
  {
    OutputWriter w(src, options(d, OutputFormat::npy, fingerprint("bilinear", "bb")));
    EXPECT_EQ(w.pending().size(), 2u);
    write_all(w, {0, 1});
  }
  EXPECT_EQ(read_store_fingerprint(d).id(), fingerprint("bilinear", "bb").id());
  int superseded = 0;
  for (const auto& e : fs::directory_iterator(d))
    if (e.path().filename().string().rfind("superseded-" + fingerprint().id(), 0) == 0) {
      ++superseded;
      EXPECT_TRUE(fs::exists(e.path() / "vecbench.json"));
      EXPECT_NE(slurp(e.path() / "manifest.jsonl").find("unreadable"), std::string::npos);  // kept, aside
    }
  EXPECT_EQ(superseded, 1);
  for (const auto& m : lines(d / "manifest.jsonl")) EXPECT_EQ(m["fp"], fingerprint("bilinear", "bb").id());
  // Now it holds vectors: another fingerprint is refused again.
  EXPECT_THROW(OutputWriter(src, options(d, OutputFormat::npy, fingerprint("tf-legacy", "cc"))), OutputFolderError);
  fs::remove_all(d);
}

TEST(Store, AFolderWrittenBeforeFingerprintsIsRefused) {
  const fs::path d = store_dir("legacy");
  std::ofstream(d / "manifest.jsonl") << R"({"input":"synthetic:0","output":"synthetic:0.npy","status":"ok"})"
                                         "\n";
  SyntheticSource src(1);
  try {
    OutputWriter w(src, options(d, OutputFormat::npy));
    FAIL();
  } catch (const OutputFolderError& e) {
    EXPECT_NE(std::string(e.what()).find("before output folders had fingerprints"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(d / "vecbench.json"));
  fs::remove_all(d);
}

TEST(Store, ACutManifestLineIsRepairedAndEveryInputWrittenOnce) {
  const fs::path d = store_dir("cutline");
  SyntheticSource src(10);
  {
    OutputWriter w(src, options(d, OutputFormat::shards));
    write_all(w, {0, 1, 2, 3, 4, 5});
  }
  const auto size = fs::file_size(d / "manifest.jsonl");
  fs::resize_file(d / "manifest.jsonl", size - 7);  // a crash mid-append: the last line is cut
  for (int run = 0; run < 2; ++run) {
    OutputWriter w(src, options(d, OutputFormat::shards));
    write_all(w, w.pending());
  }
  std::map<std::string, int> seen;
  for (const auto& m : lines(d / "manifest.jsonl")) ++seen[m["input"].get<std::string>()];  // every line parses
  EXPECT_EQ(seen.size(), 10u);
  for (const auto& [k, n] : seen) EXPECT_EQ(n, 1) << k;
  fs::remove_all(d);
}

TEST(Store, MissingTruncatedOrOrphanedDataIsRedone) {
  const fs::path d = store_dir("redo");
  SyntheticSource src(4);
  {
    OutputWriter w(src, options(d, OutputFormat::npy));
    write_all(w, {0, 1, 2, 3});
  }
  fs::resize_file(d / "synthetic:1.npy", 100);        // truncated
  fs::remove(d / "synthetic:2.npy");                  // missing
  std::ofstream(d / "synthetic:3.npy") << "garbage";  // unreadable
  {
    OutputWriter w(src, options(d, OutputFormat::npy));
    EXPECT_EQ(w.pending(), (std::vector<std::size_t>{1, 2, 3}));
  }
  const fs::path s = store_dir("redo_shards");
  {
    OutputWriter w(src, options(s, OutputFormat::shards));
    write_all(w, {0, 1, 2, 3});  // shard-00000: 0, 1; shard-00001: 2, 3
  }
  fs::resize_file(s / "shard-00001.npy", fs::file_size(s / "shard-00001.npy") - 4);
  const float f[8] = {};
  npy::save_f32(s / "shard-00007.npy", f, {2, 4});  // a shard no line points at
  OutputWriter w(src, options(s, OutputFormat::shards));
  EXPECT_EQ(w.pending(), (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(w.orphaned_shards(), 1u);
  write_all(w, w.pending());
  EXPECT_TRUE(fs::exists(s / "shard-00008.npy"));  // numbering goes past every existing shard
  const auto m = merge_manifests({s}, s);
  EXPECT_EQ(m.ok, 4u);
  EXPECT_EQ(m.dropped, 2u);  // the cut shard's two lines
  fs::remove_all(d);
  fs::remove_all(s);
}

TEST(Store, NamesAreUniqueByConstructionAcrossRunsAndLongNamesAreShortened) {
  const fs::path d = store_dir("names");
  NamedSource first({"/data/_up_/a.jpg"}, "/data");
  {
    OutputWriter w(first, options(d, OutputFormat::npy));
    EXPECT_EQ(w.output_name(0), "_up_/a.jpg.npy");
    write_all(w, {0});
  }
  // Another input whose plain name is the one taken: a hashed name, the first file untouched.
  const std::string long_name = "/data/" + std::string(251, 'x') + ".jpg";
  NamedSource second({"/data/_up_/a.jpg", "../a.jpg", "/data/_up_/a.jpg.2", long_name}, "/data");
  OutputWriter w(second, options(d, OutputFormat::npy));
  EXPECT_EQ(w.pending(), (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_EQ(w.output_name(0), "_up_/a.jpg.npy");
  EXPECT_EQ(w.output_name(1).rfind("_up_/a.jpg~", 0), 0u) << w.output_name(1);
  EXPECT_EQ(w.output_name(2), "_up_/a.jpg.2.npy");
  EXPECT_LE(fs::path(w.output_name(3)).filename().string().size(), kMaxOutputNameBytes);
  write_all(w, {1, 2, 3});
  std::set<std::string> outputs;
  for (const auto& m : lines(d / "manifest.jsonl")) {
    EXPECT_EQ(m["status"], "ok") << m.dump();
    EXPECT_TRUE(outputs.insert(m["output"].get<std::string>()).second) << m.dump();
    EXPECT_TRUE(npy_rows_complete(d / m["output"].get<std::string>(), -1, 4)) << m.dump();
  }
  EXPECT_EQ(outputs.size(), 4u);
  EXPECT_EQ(npy::as_f32(npy::load(d / "_up_/a.jpg.npy"))[0], 0.0f);  // still the first input's vector
  fs::remove_all(d);
}

TEST(Store, AListSavedByAWindowsEditorNamesItsFirstInput) {
  // A UTF-8 byte order mark before the first path and CRLF line ends (issue #46): the first input
  // is a.jpg, not "\xEF\xBB\xBFimg/a.jpg".
  const fs::path d = store_dir("bom");
  fs::create_directories(d / "img");
  for (const char* n : {"a.jpg", "b.jpg"}) std::ofstream(d / "img" / n) << "x";
  std::ofstream(d / "list.txt", std::ios::binary) << "\xEF\xBB\xBFimg/a.jpg\r\nimg/b.jpg\r\n";
  const ImageList l = collect_images(d / "list.txt");
  EXPECT_EQ(l.paths, (std::vector<std::string>{fs::canonical(d / "img" / "a.jpg").string(),
                                               fs::canonical(d / "img" / "b.jpg").string()}));
  fs::remove_all(d);
}

TEST(Store, AListIsKeyedByCanonicalPathsAndDuplicatesAreDropped) {
  const fs::path d = store_dir("canon");
  fs::create_directories(d / "rel" / "img");
  for (const char* n : {"a.jpg", "b.jpg"}) std::ofstream(d / "rel" / "img" / n) << "x";
  fs::create_symlink(d / "rel" / "img" / "a.jpg", d / "rel" / "img" / "link.jpg");
  std::ofstream(d / "rel" / "list.txt") << "img/a.jpg\nimg/./b.jpg\nimg/../img/a.jpg\nimg/link.jpg\n"
                                        << (d / "rel" / "img" / "b.jpg").string() << "\n";
  const auto cwd = fs::current_path();
  fs::current_path(d);
  const ImageList from_parent = collect_images("rel/list.txt");
  fs::current_path(d / "rel");
  const ImageList from_inside = collect_images("list.txt");
  fs::current_path(cwd);
  const ImageList absolute = collect_images(d / "rel" / "list.txt");
  const std::vector<std::string> want = {fs::canonical(d / "rel" / "img" / "a.jpg").string(),
                                         fs::canonical(d / "rel" / "img" / "b.jpg").string()};
  for (const auto* l : {&from_parent, &from_inside, &absolute}) {
    EXPECT_EQ(l->paths, want);
    EXPECT_EQ(l->duplicates, 3u);
    EXPECT_EQ(l->root, fs::canonical(d / "rel"));
  }
  fs::remove_all(d);
}

TEST(Store, MergeRefusesToMixFingerprintsAndLeavesOtherLinesOut) {
  const fs::path d = store_dir("mergefp");
  SyntheticSource src(2);
  {
    OutputWriter a(src, options(d / "a", OutputFormat::npy));
    write_all(a, {0, 1});
    OutputWriter b(src, options(d / "b", OutputFormat::npy, fingerprint("bilinear")));
    write_all(b, {0, 1});
  }
  try {
    merge_manifests({d / "a", d / "b"}, d / "all");
    FAIL() << "merged two fingerprints";
  } catch (const OutputFolderError& e) {
    EXPECT_NE(std::string(e.what()).find("resize"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(d / "all" / "manifest.jsonl"));
  // A line of another fingerprint (hand-edited, or from an old writer) is left out.
  std::ofstream(d / "a" / "manifest.jsonl", std::ios::app)
      << R"({"input":"synthetic:9","output":"synthetic:0.npy","status":"ok","fp":"0000000000000000"})"
         "\n";
  const auto m = merge_manifests({d / "a"}, d / "all");
  EXPECT_EQ(m.ok, 2u);
  EXPECT_EQ(m.other_fp, 1u);
  EXPECT_EQ(read_store_fingerprint(d / "all").id(), fingerprint().id());
  fs::remove_all(d);
}

TEST(Compare, NothingComparedIsItsOwnExitStatus) {
  CompareReport r;
  EXPECT_EQ(compare_exit_code(r), kCompareUnusable);
  EXPECT_NE(compare_markdown(r).find("Nothing was compared"), std::string::npos);
  RunComparison c;
  c.verdict = Verdict::slower;
  r.runs.push_back(c);
  EXPECT_EQ(compare_exit_code(r), kCompareRegression);
}

TEST(Progress, TextHasCountsRatesEtaAndFailures) {
  EXPECT_EQ(format_duration(5), "5s");
  EXPECT_EQ(format_duration(245), "4m05s");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(format_duration(NAN), "?");
  EXPECT_EQ(progress_text(120, 1000, 2, 20, 10), "120/1000 (12.0%), 20.0 img/s now, 10.0 overall, ETA 44s, 2 failed");
  EXPECT_EQ(progress_text(0, 10, 0, 0, 0), "0/10 (0.0%), 0.0 img/s now, 0.0 overall, ETA ?, 0 failed");
}

// The display thread's lines come when the test ticks it (manual_ticks), not when a sleep was
// long enough: one plain line per tick, with the counts of that moment.
TEST(Progress, CountsEveryOutcomeAndPrintsPlainLinesAsItGoes) {
  MemorySink mem(4);
  std::ostringstream out;
  ProgressOptions o;
  o.interval_s = 3600;  // the timer is not what draws here
  o.manual_ticks = true;
  ProgressSink p(mem, 4, o, out);
  const float f[2] = {1, 2};
  p.on_features(0, f, 2);
  p.on_error(1, "x: broken");
  ASSERT_TRUE(p.tick());
  const std::string first = out.str();
  p.on_features(2, f, 2);
  ASSERT_TRUE(p.tick());
  p.stop();
  EXPECT_FALSE(p.tick());  // stopped: no thread to tick
  EXPECT_EQ(p.done(), 3u);
  EXPECT_EQ(p.failed(), 1u);
  EXPECT_EQ(mem.times_seen(0), 1);  // passed on to the real sink
  EXPECT_EQ(mem.error(1), "x: broken");
  EXPECT_EQ(first.rfind("vecbench: 2/4 (50.0%), ", 0), 0u) << first;
  EXPECT_EQ(std::count(first.begin(), first.end(), '\n'), 1) << first;
  EXPECT_NE(first.find(", 1 failed\n"), std::string::npos) << first;
  const std::string text = out.str();
  ASSERT_EQ(text.rfind(first, 0), 0u) << text;
  const std::string second = text.substr(first.size());
  EXPECT_EQ(second.rfind("vecbench: 3/4 (75.0%), ", 0), 0u) << text;
  EXPECT_EQ(std::count(second.begin(), second.end(), '\n'), 1) << text;  // stop() adds no plain line
  EXPECT_EQ(text.find('\r'), std::string::npos) << "plain lines only when not a terminal";
  std::ostringstream none;
  o.interval_s = 0;
  o.manual_ticks = false;
  ProgressSink quiet(mem, 4, o, none);
  EXPECT_FALSE(quiet.tick());  // no display thread at all
  quiet.on_features(3, f, 2);
  quiet.stop();
  EXPECT_EQ(none.str(), "");
}

namespace {
/// An output stream that a second thread may write while this one waits for its first line.
class LineGate : public std::streambuf {
 public:
  /// Waits until a written line holds `what` (false after `guard`: the deadlock guard only).
  bool wait_for_line_with(const std::string& what, std::chrono::seconds guard) {
    std::unique_lock<std::mutex> lk(m_);
    return cv_.wait_for(lk, guard, [&] {
      const auto at = text_.find(what);
      return at != std::string::npos && text_.find('\n', at) != std::string::npos;
    });
  }
  std::string text() {
    std::lock_guard<std::mutex> lk(m_);
    return text_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) put(std::string(1, traits_type::to_char_type(c)));
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    put(std::string(s, static_cast<std::size_t>(n)));
    return n;
  }

 private:
  void put(const std::string& s) {
    std::lock_guard<std::mutex> lk(m_);
    text_ += s;
    cv_.notify_all();
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::string text_;
};
}  // namespace

// The timer itself (the default, no manual ticks): a line comes while the run goes on. The
// verdict waits for that line as an event; the guard only ends a hang.
TEST(Progress, TheTimerDrawsLinesWhileTheRunGoesOn) {
  MemorySink mem(4);
  LineGate gate;
  std::ostream out(&gate);
  ProgressOptions o;
  o.interval_s = 0.01;
  ProgressSink p(mem, 4, o, out);
  const float f[2] = {1, 2};
  p.on_features(0, f, 2);
  EXPECT_TRUE(gate.wait_for_line_with("vecbench: 1/4 (25.0%), ", std::chrono::seconds(120)))
      << "no progress line in 120 s: " << gate.text();
  p.stop();
  EXPECT_EQ(gate.text().find('\r'), std::string::npos) << gate.text();
}

TEST(ModelFile, AStoredZipMemberIsReadWithoutLibTorch) {
  const fs::path d = store_dir("zip");
  const std::string py = std::string(VECBENCH_PYTHON).empty() ? "python3" : VECBENCH_PYTHON;
  const std::string make =
      py +
      " -c \"import zipfile,sys; z=zipfile.ZipFile(sys.argv[1],'w'); "
      "z.writestr('m/data.pkl','x'*100); z.writestr('m/extra/vecbench_meta.json','{\\\"arch\\\": \\\"t\\\"}'); "
      "z.writestr(zipfile.ZipInfo('m/extra/packed.json'),'y'*500,compress_type=zipfile.ZIP_DEFLATED); "
      "z.close()\" " +
      (d / "m.pt").string();
  ASSERT_EQ(std::system(make.c_str()), 0);
  std::string text;
  ASSERT_TRUE(read_stored_zip_member((d / "m.pt").string(), "/extra/vecbench_meta.json", text));
  EXPECT_EQ(text, "{\"arch\": \"t\"}");
  EXPECT_FALSE(read_stored_zip_member((d / "m.pt").string(), "/extra/packed.json", text));  // compressed
  EXPECT_FALSE(read_stored_zip_member((d / "m.pt").string(), "/extra/none.json", text));
  std::ofstream(d / "not.zip") << "plain text, no archive";
  EXPECT_FALSE(read_stored_zip_member((d / "not.zip").string(), "/extra/vecbench_meta.json", text));
  EXPECT_FALSE(read_stored_zip_member((d / "missing.pt").string(), "/extra/vecbench_meta.json", text));
  fs::remove_all(d);
}

// Issue #26, case 3: vectors were stored as ok whatever they held. NaN, Inf, negative or huge
// pool_3 values (a broken model or weights file) are now each input's error, never an ok line;
// when most of 8 or more vectors are like that, the writer asks the run to stop, saying why.
TEST(Store, ImplausibleVectorsAreErrorsNamingTheCauseAndMostOfThemStopTheRun) {
  EXPECT_EQ(implausible_features(std::vector<float>{0, 1.5f, 30}.data(), 3), "");
  EXPECT_EQ(implausible_features(std::vector<float>{0, NAN, 1}.data(), 3), "NaN at element 1");
  EXPECT_EQ(implausible_features(std::vector<float>{0, 1, 3.1e19f}.data(), 3),
            "value 3.1e+19 at element 2 (plausible: 0 to 1e+04)");
  EXPECT_NE(implausible_features(std::vector<float>{INFINITY}.data(), 1), "");
  EXPECT_NE(implausible_features(std::vector<float>{-2}.data(), 1), "");
  // an encoder whose features may be negative (DINOv2's layer-normed CLS token): only the magnitude
  EXPECT_EQ(implausible_features(std::vector<float>{-2, 3}.data(), 2, false), "");
  EXPECT_EQ(implausible_features(std::vector<float>{-2e4f}.data(), 1, false),
            "value -2e+04 at element 0 (plausible: -1e+04 to 1e+04)");
  EXPECT_NE(implausible_features(std::vector<float>{NAN}.data(), 1, false), "");
  const fs::path d = store_dir("sanity");
  SyntheticSource src(12);
  std::atomic<bool> stop{false};
  WriterOptions o = options(d, OutputFormat::npy);
  o.check_features = true;
  o.stop = &stop;
  OutputWriter w(src, o);
  const float good[4] = {0, 1, 2, 3}, bad[4] = {0, 1, 2, 1e19f};
  w.on_features(0, good, 4);
  w.on_features(1, bad, 4);
  EXPECT_EQ(w.implausible(), 1u);
  EXPECT_FALSE(stop) << "one bad vector is that input's error only";
  EXPECT_EQ(w.abort_reason(), "");
  EXPECT_EQ(w.abort_kind(), StopKind::none);
  for (std::size_t i = 2; i < 8; ++i) w.on_features(i, i < 4 ? good : bad, 4);  // 5 of 8 bad
  EXPECT_TRUE(stop);
  EXPECT_EQ(w.abort_kind(), StopKind::broken_model);  // the exit status (1) follows the kind
  EXPECT_NE(w.abort_reason().find("5 of 8 feature vectors implausible: the model or its weights file is broken"),
            std::string::npos)
      << w.abort_reason();
  w.finish();
  std::size_t ok = 0, errors = 0;
  for (const auto& j : lines(d / "manifest.jsonl")) {
    if (j["status"] == "ok") {
      ++ok;
      continue;
    }
    ++errors;
    EXPECT_NE(j["error"].get<std::string>().find("implausible feature vector (value 1e+19 at element 3"),
              std::string::npos)
        << j.dump();
  }
  EXPECT_EQ(ok, 3u);
  EXPECT_EQ(errors, 5u);
  EXPECT_FALSE(fs::exists(d / "synthetic:1.npy")) << "an implausible vector is never stored";
  fs::remove_all(d);
}

// Issue #26, case 7: files were renamed into place without an fsync of their directory, so a
// power loss could lose a rename that a manifest line already pointed at. Every atomic write
// (vector files, shards, vecbench.json) and every new manifest now syncs its directory.
TEST(Store, EveryRenameAndNewManifestSyncsItsDirectory) {
  const fs::path d = store_dir("dirsync");
  auto syncs = [] { return directory_syncs().load(); };
  std::size_t before = syncs();
  atomic_write(d / "one.txt", "x");
  EXPECT_EQ(syncs() - before, 1u);
  SyntheticSource src(3);
  before = syncs();
  {
    OutputWriter w(src, options(d / "npy", OutputFormat::npy));  // vecbench.json + the new manifest
    EXPECT_EQ(syncs() - before, 2u);
    write_all(w, {0, 1, 2});
  }
  EXPECT_EQ(syncs() - before, 2u + 3u) << "one per vector file";
  before = syncs();
  {
    OutputWriter w(src, options(d / "shards", OutputFormat::shards));  // shard_rows 2: two shards
    write_all(w, {0, 1, 2});
  }
  EXPECT_EQ(syncs() - before, 2u + 2u);
  fs::remove_all(d);
}
