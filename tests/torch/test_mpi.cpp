// `mpirun -np 2 vecbench ...` on one machine (--oversubscribe; --allow-run-as-root when root):
// the features equal a one-process run bit for bit (--threads 1, batch 1 everywhere), every image
// once, in static and dynamic mode; a failing image is reported as on one machine; a dead or hung
// rank ends the job with a clear message and a rerun resumes; `vecbench run` gathers one result.
// Compiled (and so registered with ctest) only in builds with MPI (VECBENCH_MPIEXEC).
#ifdef VECBENCH_MPIEXEC
#include "dist_util.hpp"

#include "vecbench/results/result.hpp"

using namespace vecbench;
using namespace vecbench::disttest;

namespace {

const std::string kCommon = " --threads 1 --batch 1 --warmup 0";

/// vecbench with a fault around its writer (tests/vecbench_fault.cpp: VECBENCH_TEST_DIE_AFTER).
const std::string kFaultExe = VECBENCH_FAULT_EXE;

/// `mpirun -np 2 [env] vecbench ARGS`, with a time limit; a `fault` (VECBENCH_TEST_DIE_AFTER's
/// value) runs vecbench_fault with it.
std::string mpirun(const std::string& args, const std::string& fault = "") {
  std::string m = "timeout 300 " + std::string(VECBENCH_MPIEXEC) + " -np 2 --oversubscribe";
  if (::getuid() == 0) m += " --allow-run-as-root";
  if (!fault.empty()) m += " -x VECBENCH_TEST_DIE_AFTER=" + fault;
  return m + " " + (fault.empty() ? kExe : kFaultExe) + " " + args;
}

class Mpi : public ::testing::Test {
 protected:
  /// One-process features of synthetic:10, made once.
  static void SetUpTestSuite() {
    dir_ = new fs::path(tmpdir("mpi_ref"));
    const auto r = sh(kExe + " vectorize --images synthetic:10 --out " + (*dir_ / "one").string() +
                      " --format shards --strategy sequential" + kCommon);
    ASSERT_EQ(r.rc, 0) << r.out;
    ref_ = new std::map<std::string, std::vector<float>>(features_of(*dir_ / "one"));
    ASSERT_EQ(ref_->size(), 10u);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete ref_;
  }
  static fs::path* dir_;
  static std::map<std::string, std::vector<float>>* ref_;
};
fs::path* Mpi::dir_ = nullptr;
std::map<std::string, std::vector<float>>* Mpi::ref_ = nullptr;

}  // namespace

TEST_F(Mpi, StaticAndDynamicGiveTheSameFeaturesAsOneProcessEachImageOnce) {
  const fs::path d = tmpdir("mpi_modes");
  for (const std::string mode : {"static", "dynamic"}) {
    SCOPED_TRACE(mode);
    const fs::path out = d / mode;
    const auto r = sh(mpirun("vectorize --images synthetic:10 --out " + out.string() +
                             " --format shards --shard-rows 3 " + "--distribution " + mode + " --chunk 2" + kCommon));
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("vectorize images=10 ok=10 failed=0 skipped=0"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ranks=2"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("10 inputs (10 ok, 0 failed) merged from 2 manifests"), std::string::npos) << r.out;
    EXPECT_TRUE(fs::exists(out / "manifest-r0000.jsonl"));
    EXPECT_TRUE(fs::exists(out / "manifest-r0001.jsonl"));
    const auto counts = ok_counts(out);
    EXPECT_EQ(counts.size(), 10u);
    for (const auto& [k, n] : counts) EXPECT_EQ(n, 1) << k << " done more than once";
    if (mode == "static") {  // strided: rank 1 takes inputs 1, 3, 5, 7, 9
      for (const auto& j : lines_of(out / "manifest-r0001.jsonl"))
        EXPECT_EQ(std::stoi(j["input"].get<std::string>().substr(10)) % 2, 1) << j.dump();
    }
    expect_same_features(features_of(out), *ref_);
  }
  fs::remove_all(d);
}

TEST_F(Mpi, AFailingImageOnARankIsReportedAsOnOneMachine) {
  const fs::path d = tmpdir("mpi_bad");
  fs::create_directories(d / "in");
  std::ofstream list(d / "list.txt");
  int photos = 0;
  for (const char* f : {"lena.jpg", "baboon.jpg", "fruits.jpg", "building.jpg", "messi5.jpg"})
    if (fs::exists(fs::path(kPhotos) / f) && photos < 3) {
      list << (fs::path(kPhotos) / f).string() << "\n";
      ++photos;
    }
  ASSERT_GE(photos, 2) << "opencv-doc photos missing (apt-get install opencv-doc)";
  std::ofstream(d / "in" / "empty.jpg").close();
  std::ofstream(d / "in" / "text.png") << "this is text";
  list << "in/empty.jpg\nin/text.png\n";
  list.close();
  const std::string args = " --images " + (d / "list.txt").string() + " --format npy" + kCommon;
  auto r = sh(mpirun("vectorize --out " + (d / "mpi").string() + args));
  EXPECT_EQ(r.rc, 2) << r.out;  // some failed, as on one machine
  EXPECT_NE(r.out.find("empty.jpg: empty file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("text.png: not an image"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok=" + std::to_string(photos) + " failed=2"), std::string::npos) << r.out;
  int errors = 0;
  for (const auto& j : lines_of(d / "mpi" / "manifest.jsonl"))
    if (j["status"] == "error") {
      ++errors;
      EXPECT_FALSE(j["error"].get<std::string>().empty());
    }
  EXPECT_EQ(errors, 2);
  r = sh(kExe + " vectorize --out " + (d / "one").string() + args);
  EXPECT_EQ(r.rc, 2) << r.out;
  expect_same_features(features_of(d / "mpi"), features_of(d / "one"));
  fs::remove_all(d);
}

TEST_F(Mpi, AKilledRankEndsTheJobWithAClearMessageAndARerunResumes) {
  const fs::path d = tmpdir("mpi_kill");
  const std::string args =
      "vectorize --images synthetic:10 --out " + (d / "out").string() + " --format shards --shard-rows 1" + kCommon;
  auto r = sh(mpirun(args, "1@1"));
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("rank 1 ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("VECBENCH_TEST_DIE_AFTER=1 reached: dying on purpose"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(d / "out" / "manifest.jsonl"));  // no merged manifest from a failed job
  const auto before = ok_counts(d / "out");
  ASSERT_LT(before.size(), 10u) << "nothing was left to do: the test proves nothing";
  r = sh(mpirun(args));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("skipped=" + std::to_string(before.size())), std::string::npos) << r.out;
  for (const auto& [k, n] : ok_counts(d / "out")) EXPECT_EQ(n, 1) << k << " done more than once";
  expect_same_features(features_of(d / "out"), *ref_);
  fs::remove_all(d);
}

TEST_F(Mpi, DynamicModeEndsOnADeadServerOrAHungRankAndARerunResumes) {
  const fs::path d = tmpdir("mpi_dyn_fail");
  const std::string args = "vectorize --images synthetic:10 --out " + (d / "out").string() +
                           " --format shards --distribution dynamic --chunk 1" + kCommon;
  // A hung rank: rank 0 gives up on it after --rank-timeout (large shards: nothing is flushed).
  auto r = sh(mpirun(args + " --shard-rows 100 --rank-timeout 3", "1@1:hang"));
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("rank 0: rank 1 ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("for more than 3 s without asking for more: it died or hung"), std::string::npos) << r.out;
  // A dead rank 0 (the one that serves the chunks).
  r = sh(mpirun(args + " --shard-rows 1", "1@0"));
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("rank 0 ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dying on purpose"), std::string::npos) << r.out;
  ASSERT_LT(ok_counts(d / "out").size(), 10u) << "nothing was left to do: the test proves nothing";
  r = sh(mpirun(args + " --shard-rows 1"));
  ASSERT_EQ(r.rc, 0) << r.out;
  for (const auto& [k, n] : ok_counts(d / "out")) EXPECT_EQ(n, 1) << k << " done more than once";
  expect_same_features(features_of(d / "out"), *ref_);
  fs::remove_all(d);
}

TEST_F(Mpi, RunGathersOneResultWithPerRankAndTotalFigures) {
  const fs::path d = tmpdir("mpi_run");
  std::ofstream(d / "exp.json") << R"({"name": "mpirun", "images": {"synthetic": 6}, "repetitions": 1,
    "warmup_batches": 1, "matrix": {"strategy": ["data-parallel"], "devices": ["cpu"], "threads": [1]}})";
  for (const std::string mode : {"static", "dynamic"}) {
    SCOPED_TRACE(mode);
    const fs::path res = d / ("res-" + mode);
    const auto r =
        sh(mpirun("run " + (d / "exp.json").string() + " --results " + res.string() + " --distribution " + mode));
    ASSERT_EQ(r.rc, 0) << r.out;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(res / "mpirun"))
      if (e.path().extension() == ".json") files.push_back(e.path());  // not the .traces folder
    ASSERT_EQ(files.size(), 1u) << "rank 0 alone writes the result";
    const ResultFile f = load_result(files[0]);
    EXPECT_EQ(f.config.effective["distribution"]["ranks"], 2);
    EXPECT_EQ(f.config.effective["distribution"]["mode"], mode);
    ASSERT_EQ(f.runs.size(), 1u);
    EXPECT_EQ(f.runs[0].status, RunStatus::ok) << f.runs[0].reason;
    const Sample& s = f.runs[0].samples.at(0);
    EXPECT_EQ(s.images, 6);
    ASSERT_TRUE(s.ranks.has_value());
    EXPECT_EQ(s.ranks->count, 2);
    EXPECT_EQ(s.ranks->distribution, mode);
    ASSERT_EQ(s.ranks->per_rank.size(), 2u);
    EXPECT_EQ(s.ranks->per_rank[0].images + s.ranks->per_rank[1].images, 6);
    EXPECT_FALSE(s.ranks->per_rank[1].host.empty());
    EXPECT_NEAR(s.wall_s, std::max(s.ranks->per_rank[0].wall_s, s.ranks->per_rank[1].wall_s), 1e-9);
    if (mode == "dynamic") {
      EXPECT_GE(s.ranks->per_rank[0].chunks, 0);
    }
    ASSERT_TRUE(f.runs[0].verification.has_value());
    EXPECT_EQ(f.runs[0].verification->compared_images, 6);
    EXPECT_EQ(f.runs[0].verification->max_abs_diff, 0.0);
  }
  fs::remove_all(d);
}

#endif  // VECBENCH_MPIEXEC

// Rank 0's progress lines count the whole job: the other rank sends its counts, so a line can
// show more than rank 0's own share (30 of 60 in static mode); rank 1 draws no line of its own.
TEST_F(Mpi, RankZeroProgressLinesCountTheWholeJob) {
  const fs::path d = tmpdir("mpi_progress");
  const auto r = sh(mpirun("vectorize --images synthetic:60 --out " + (d / "o").string() +
                           " --format none --progress 0.2" + kCommon));
  ASSERT_EQ(r.rc, 0) << r.out;
  std::size_t lines = 0, most = 0;
  for (std::size_t at = r.out.find("vecbench: job (2 ranks): "); at != std::string::npos;
       at = r.out.find("vecbench: job (2 ranks): ", at + 1)) {
    ++lines;
    most = std::max<std::size_t>(most, std::stoul(r.out.substr(at + 25)));
  }
  EXPECT_GE(lines, 2u) << r.out;
  EXPECT_GT(most, 30u) << r.out;
  EXPECT_LE(most, 60u) << r.out;
  std::size_t progress_lines = 0;  // every progress line is rank 0's job line
  for (std::size_t at = r.out.find("/60 ("); at != std::string::npos; at = r.out.find("/60 (", at + 1))
    ++progress_lines;
  EXPECT_EQ(progress_lines, lines) << r.out;
  fs::remove_all(d);
}
