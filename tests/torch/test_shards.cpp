// Several processes without MPI: `--shard-index/--num-shards` (or Slurm's SLURM_PROCID and
// SLURM_NTASKS) split the inputs, `vecbench merge` joins the per-shard manifests and result
// files; the features equal a one-process run bit for bit (--threads 1, batch 1 everywhere).
#include "dist_util.hpp"

#include <algorithm>

#include "vecbench/results/result.hpp"

using namespace vecbench;
using namespace vecbench::disttest;

namespace {
const std::string kCommon = " --threads 1 --batch 1 --warmup 0";
}

TEST(Shards, FlagsAndMergeGiveTheSameFeaturesAsOneProcess) {
  const fs::path d = tmpdir("shards");
  const std::string images = " --images synthetic:8";
  auto r = sh(kExe + " vectorize" + images + " --out " + (d / "one").string() +
              " --format shards --strategy sequential" + kCommon);
  ASSERT_EQ(r.rc, 0) << r.out;
  // Three shards at once into one directory (as three Slurm tasks would).
  std::string cmd = "(";
  for (int i = 0; i < 3; ++i)
    cmd += kExe + " vectorize" + images + " --out " + (d / "out").string() + " --format shards --shard-rows 2" +
           kCommon + " --shard-index " + std::to_string(i) + " --num-shards 3 > " +
           (d / ("s" + std::to_string(i) + ".log")).string() + " 2>&1 & ";
  cmd += "wait)";
  sh(cmd);
  for (int i = 0; i < 3; ++i) {
    std::ifstream log(d / ("s" + std::to_string(i) + ".log"));
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("shard=" + std::to_string(i) + "/3"), std::string::npos) << text;
    EXPECT_NE(text.find("vecbench merge"), std::string::npos) << text;  // the hint
    EXPECT_TRUE(fs::exists(d / "out" / ("manifest-r000" + std::to_string(i) + ".jsonl")));
  }
  for (const auto& j : lines_of(d / "out" / "manifest-r0001.jsonl")) {  // shard 1: inputs 1, 4, 7
    const std::string in = j["input"];
    EXPECT_TRUE(in == "synthetic:1" || in == "synthetic:4" || in == "synthetic:7") << in;
  }
  EXPECT_FALSE(fs::exists(d / "out" / "manifest.jsonl"));
  for (const auto& [k, n] : ok_counts(d / "out")) EXPECT_EQ(n, 1) << k << " done more than once";
  r = sh(kExe + " merge " + (d / "out").string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("8 inputs (8 ok, 0 failed) from 3 manifests"), std::string::npos) << r.out;
  expect_same_features(features_of(d / "out"), features_of(d / "one"));
  // A rerun of a shard finds its share done.
  r = sh(kExe + " vectorize" + images + " --out " + (d / "out").string() + " --format shards" + kCommon +
         " --shard-index 1 --num-shards 3");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("ok=0 failed=0 skipped=3"), std::string::npos) << r.out;
  // Merging into another directory points at the shard files from there.
  r = sh(kExe + " merge --out " + (d / "all").string() + " " + (d / "out").string());
  ASSERT_EQ(r.rc, 0) << r.out;
  expect_same_features(features_of(d / "all"), features_of(d / "one"));
  fs::remove_all(d);
}

TEST(Shards, SlurmVariablesPickTheShardUnlessFlagsAreGiven) {
  const fs::path d = tmpdir("slurm");
  auto r = sh("SLURM_PROCID=1 SLURM_NTASKS=2 " + kExe + " vectorize --images synthetic:5 --out " +
              (d / "out").string() + " --format npy" + kCommon);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("shard 1 of 2 (from SLURM_PROCID/SLURM_NTASKS)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("images=2 ok=2"), std::string::npos) << r.out;
  std::vector<std::string> done;
  for (const auto& j : lines_of(d / "out" / "manifest-r0001.jsonl")) done.push_back(j["input"]);
  std::sort(done.begin(), done.end());  // lines come in completion order (the default route has 2 replicas here)
  EXPECT_EQ(done, (std::vector<std::string>{"synthetic:1", "synthetic:3"}));
  r = sh("SLURM_PROCID=1 SLURM_NTASKS=2 " + kExe + " vectorize --images synthetic:5 --out " + (d / "out").string() +
         " --format npy --shard-index 0 --num-shards 2" + kCommon);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("shard=0/2"), std::string::npos) << r.out;
  r = sh(kExe + " merge --out " + (d / "out").string());  // --out alone: that directory in place
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(features_of(d / "out").size(), 5u);
  r = sh("SLURM_PROCID=0 SLURM_NTASKS=2 " + kExe + " vectorize --images synthetic:5 --out " + (d / "x").string() +
         " --distribution dynamic" + kCommon);
  EXPECT_EQ(r.rc, 1) << r.out;  // dynamic needs MPI
  EXPECT_NE(r.out.find("dynamic needs MPI"), std::string::npos) << r.out;
  fs::remove_all(d);
}

TEST(Shards, RunResultFilesMergeIntoOneWithPerShardAndTotalFigures) {
  const fs::path d = tmpdir("runshards");
  std::ofstream(d / "exp.json") << R"({"name": "shardrun", "images": {"synthetic": 6}, "repetitions": 1,
    "warmup_batches": 1, "matrix": {"strategy": ["data-parallel"], "devices": ["cpu"], "threads": [1]}})";
  std::string cmd = "(";
  for (int i = 0; i < 2; ++i)
    cmd += kExe + " run " + (d / "exp.json").string() + " --results " + (d / "res").string() + " --shard-index " +
           std::to_string(i) + " --num-shards 2 > " + (d / ("r" + std::to_string(i) + ".log")).string() + " 2>&1 & ";
  sh(cmd + "wait)");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(d / "res" / "shardrun"))
    if (e.path().extension() == ".json") files.push_back(e.path().string());  // not the .traces folders
  // names start with each process's own UTC second, which may differ: order them by shard
  const auto shard_part = [](const std::string& f) {
    const auto at = f.rfind("-shard");
    return at == std::string::npos ? f : f.substr(at);
  };
  std::sort(files.begin(), files.end(),
            [&](const std::string& a, const std::string& b) { return shard_part(a) < shard_part(b); });
  ASSERT_EQ(files.size(), 2u) << sh("cat " + (d / "r0.log").string() + " " + (d / "r1.log").string()).out;
  EXPECT_NE(files[0].find("-shard0of2.json"), std::string::npos);
  EXPECT_NE(files[1].find("-shard1of2.json"), std::string::npos);
  const ResultFile one = load_result(files[1]);
  ASSERT_TRUE(one.runs[0].samples[0].ranks.has_value());
  EXPECT_EQ(one.runs[0].samples[0].ranks->count, 2);
  EXPECT_EQ(one.runs[0].samples[0].images, 3);
  // The environment record: the binary's build (compiled in), the CPU's ISA, the load around it.
  ASSERT_TRUE(one.meta.environment.has_value());
  EXPECT_FALSE(one.meta.environment->build_type.empty());
  EXPECT_EQ(one.meta.git_sha, one.meta.environment->binary_git_sha);
  EXPECT_NE(one.meta.environment->binary_git_sha, "");
  EXPECT_EQ(one.meta.environment->load_avg_before.size(), 3u);
  EXPECT_EQ(one.meta.environment->load_avg_after.size(), 3u);
  ASSERT_TRUE(one.runs[0].validity.has_value());
  // The default model's record and the run's header say its weights are synthetic.
  EXPECT_NE(one.meta.model.value("weights_note", "").find("synthetic weights (seed 0): not Inception's"),
            std::string::npos)
      << one.meta.model.dump();
  EXPECT_NE(sh("cat " + (d / "r0.log").string()).out.find("(synthetic weights (seed 0): not Inception's"),
            std::string::npos);
  const auto r = sh(kExe + " merge --results " + files[0] + " " + files[1] + " --out " + (d / "merged.json").string());
  ASSERT_EQ(r.rc, 0) << r.out;
  const ResultFile m = load_result(d / "merged.json");
  ASSERT_EQ(m.runs.size(), 1u);
  EXPECT_EQ(m.runs[0].status, RunStatus::ok);
  const Sample& s = m.runs[0].samples.at(0);
  EXPECT_EQ(s.images, 6);
  ASSERT_TRUE(s.ranks.has_value());
  ASSERT_EQ(s.ranks->per_rank.size(), 2u);
  EXPECT_EQ(s.ranks->per_rank[1].rank, 1);
  EXPECT_NEAR(s.wall_s, std::max(s.ranks->per_rank[0].wall_s, s.ranks->per_rank[1].wall_s), 1e-12);
  EXPECT_NEAR(s.images_per_s, 6 / s.wall_s, 1e-9);
  ASSERT_TRUE(s.ranks->scaling_efficiency.has_value());
  EXPECT_GT(*s.ranks->scaling_efficiency, 0.0);
  EXPECT_LE(*s.ranks->scaling_efficiency, 1.0 + 1e-9);
  ASSERT_TRUE(m.runs[0].verification.has_value());
  EXPECT_EQ(m.runs[0].verification->compared_images, 6);
  EXPECT_EQ(m.runs[0].verification->max_abs_diff, 0.0);
  EXPECT_EQ(sh(kExe + " compare " + (d / "merged.json").string() + " " + (d / "merged.json").string()).rc, 0);
  fs::remove_all(d);
}
