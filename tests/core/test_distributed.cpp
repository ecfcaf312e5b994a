// Several processes, without MPI or LibTorch: shares, the dynamic chunk protocol on thread
// "ranks", per-rank writer files and resume across ranks, manifest and result merging, sample
// combination, and where shards come from (flags, Slurm's variables).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "vecbench/app/merge.hpp"
#include "vecbench/dist/distributed_run.hpp"
#include "vecbench/dist/job_progress.hpp"
#include "vecbench/testing/encoded_source.hpp"
#include "vecbench/testing/fault_injection.hpp"
#include "vecbench/testing/named_source.hpp"
#include "vecbench/testing/stub_model.hpp"
#include "vecbench/testing/stub_reference.hpp"
#include "vecbench/testing/temp_dir.hpp"
#include "vecbench/testing/thread_comm.hpp"

using namespace vecbench;
namespace vbt = vecbench::testing;
using vecbench::testing::ThreadComm;
using vecbench::testing::ThreadGroup;

namespace {

inline fs::path tmpdir(const std::string& name) { return vecbench::testing::fresh_temp_dir(name); }

using vecbench::testing::read_jsonl;

struct RankOutcome {
  RunStats stats;
  long chunks = -1;
  std::string error;
};

/// Runs `strategy` on `n` thread ranks sharing one sink; `factory_of(rank)` makes each rank's replicas.
std::vector<RankOutcome> run_ranks(int n, const DistributionOptions& opt, const ImageSource& src, ResultSink& sink,
                                   const std::function<ModelFactory(int)>& factory_of, int input_size) {
  ThreadGroup g(n);
  std::vector<RankOutcome> out(static_cast<std::size_t>(n));
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      ThreadComm comm(g, r);
      Distribution dist(comm, opt);
      RunSettings s;
      s.batch_size = 2;
      s.warmup_batches = 1;
      auto& o = out[static_cast<std::size_t>(r)];
      try {
        const auto todo = dist.todo(all_indices(src.size()), src.size(), nullptr);
        o.stats = dist.run(find_strategy("data-parallel"), src, todo, expand_devices("cpu/2"), factory_of(r), sink, s,
                           input_size, &o.chunks);
      } catch (const std::exception& e) {
        o.error = e.what();
      }
    });
  for (auto& t : ts) t.join();
  return out;
}

}  // namespace

TEST(Distributed, StridedSharesCoverEveryInputOnce) {
  const auto all = all_indices(10);
  std::vector<int> seen(10, 0);
  for (int r = 0; r < 3; ++r)
    for (auto i : strided_share(all, r, 3)) ++seen[i];
  for (int s : seen) EXPECT_EQ(s, 1);
  EXPECT_EQ(strided_share(all, 1, 3), (std::vector<std::size_t>{1, 4, 7}));
  EXPECT_TRUE(strided_share(all_indices(2), 3, 4).empty());
  const std::vector<std::size_t> v = {0, 5, 1ull << 40, 42};
  EXPECT_EQ(decode_indices(encode_indices(v)), v);
  EXPECT_TRUE(decode_indices(encode_indices({})).empty());
}

TEST(Distributed, DynamicChunksOnThreadRanksGiveEveryInputOnceAndTheSameFeatures) {
  vbt::StubOptions o;
  o.seconds_per_image = 0.002;
  SyntheticSource src(41);
  const auto ref = vbt::stub_reference(src, o);
  for (const std::string mode : {"dynamic", "static"}) {
    SCOPED_TRACE(mode);
    DistributionOptions opt;
    opt.mode = parse_distribution_mode(mode);
    opt.chunk = 4;
    MemorySink got(src.size());
    const auto out = run_ranks(
        3, opt, src, got, [&](int) { return vbt::stub_factory(o); }, o.input_size);
    std::size_t images = 0;
    long chunks = 0;
    for (const auto& r : out) {
      EXPECT_EQ(r.error, "");
      images += r.stats.images_ok;
      chunks += std::max(0L, r.chunks);
    }
    EXPECT_EQ(images, src.size());
    if (mode == "dynamic") {
      EXPECT_EQ(chunks, 11);  // ceil(41 / 4), every one served once
    } else {
      EXPECT_EQ(out[1].stats.images_ok, 14u);  // inputs 1, 4, ..., 40
    }
    for (std::size_t i = 0; i < src.size(); ++i) {
      ASSERT_EQ(got.times_seen(i), 1) << i;
      EXPECT_EQ(got.features(i), ref->features(i)) << i;
    }
  }
}

TEST(Distributed, DynamicChunksReuseOneReplicaPerDeviceOfEachRank) {
  vbt::StubOptions o;
  SyntheticSource src(41);
  DistributionOptions opt;
  opt.mode = DistributionMode::dynamic_chunks;
  opt.chunk = 4;
  MemorySink got(src.size());
  std::atomic<int> made{0};
  const auto out = run_ranks(
      3, opt, src, got, [&](int) { return vbt::stub_factory(o, &made); }, o.input_size);
  long chunks = 0;
  for (const auto& r : out) {
    EXPECT_EQ(r.error, "");
    chunks += std::max(0L, r.chunks);
  }
  EXPECT_EQ(chunks, 11);
  EXPECT_EQ(made, 3 * 2);  // 3 ranks x cpu/2, made once each however many chunks they ran
  for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(got.times_seen(i), 1) << i;
}

namespace {
// Logs "warmup" for the model's plain warm-up and "encoded:<first encoded input>" for a forward with JPEG bytes.
class EncodedLogStub : public vbt::StubModel {
 public:
  EncodedLogStub(const VirtualDevice& d, vbt::StubOptions o, std::mutex& m, std::vector<std::string>& log)
      : StubModel(d, o), m_(m), log_(log) {}
  void warmup(int, int) override { add("warmup"); }
  ForwardTiming forward_encoded(float* in, const EncodedImages& enc, int n, float* out,
                                DeviceDecodeCounts& counts) override {
    add("encoded:" + std::to_string(vbt::encoded_index(enc.bytes.at(0))));
    return Model::forward_encoded(in, enc, n, out, counts);  // decoded on the host
  }

 private:
  void add(std::string what) {
    std::lock_guard<std::mutex> lk(m_);
    log_.push_back(std::move(what));
  }
  std::mutex& m_;
  std::vector<std::string>& log_;
};
}  // namespace

// Dynamic sharing warms each rank's replicas once, before its first request, and with device
// decoding on the rank's first batch through the replica's decoder (not constant tensors); the
// chunks after it run without a warm-up.
TEST(Distributed, DynamicChunksWarmTheDeviceDecodersUpOnTheFirstBatch) {
  vbt::StubOptions o;
  vbt::EncodedSource src(23);
  DistributionOptions opt;
  opt.mode = DistributionMode::dynamic_chunks;
  opt.chunk = 4;
  MemorySink got(src.size());
  std::mutex m;
  std::vector<std::string> log;
  const auto out = run_ranks(
      2, opt, src, got,
      [&](int) -> ModelFactory {
        return [&](const VirtualDevice& d) -> std::unique_ptr<Model> {
          return std::make_unique<EncodedLogStub>(d, o, m, log);
        };
      },
      o.input_size);
  for (const auto& r : out) EXPECT_EQ(r.error, "");
  for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(got.times_seen(i), 1) << i;
  // 2 ranks x cpu/2, warm-up_batches 1: four warm-ups, each on inputs 0 and 1 (0 as bytes)
  EXPECT_EQ(std::count(log.begin(), log.end(), "warmup"), 0);
  const auto warm = std::count(log.begin(), log.end(), "encoded:0");
  EXPECT_EQ(warm, 5);  // the four warm-ups, and the chunk's batch that starts with input 0
}

TEST(Distributed, ARankWhoseReplicaFailsLeavesAndTheOthersDoEverything) {
  vbt::StubOptions o;
  o.seconds_per_image = 0.001;
  SyntheticSource src(20);
  DistributionOptions opt;
  opt.mode = DistributionMode::dynamic_chunks;
  opt.chunk = 3;
  MemorySink got(src.size());
  const auto out = run_ranks(
      3, opt, src, got,
      [&](int r) {
        auto b = o;
        b.fail_on_load = r == 1;
        return vbt::stub_factory(b);
      },
      o.input_size);
  EXPECT_NE(out[1].error.find("failed to load"), std::string::npos) << out[1].error;
  EXPECT_EQ(out[0].error, "");
  EXPECT_EQ(out[2].error, "");
  for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(got.times_seen(i), 1) << i;
}

TEST(Distributed, CollectivesOnThreadRanks) {
  ThreadGroup g(3);
  std::vector<std::vector<std::string>> gathered(3);
  std::vector<std::string> bc(3);
  std::vector<std::thread> ts;
  for (int r = 0; r < 3; ++r)
    ts.emplace_back([&, r] {
      ThreadComm c(g, r);
      gathered[static_cast<std::size_t>(r)] = c.gather("from" + std::to_string(r));
      c.barrier();
      bc[static_cast<std::size_t>(r)] = c.broadcast(r == 0 ? "root says hi" : "ignored");
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(gathered[0], (std::vector<std::string>{"from0", "from1", "from2"}));
  EXPECT_TRUE(gathered[1].empty());
  for (const auto& s : bc) EXPECT_EQ(s, "root says hi");
  LocalComm alone(2, 4);  // a shard: no peers, collectives are local
  EXPECT_EQ(alone.gather("x"), std::vector<std::string>{"x"});
  EXPECT_EQ(alone.broadcast("y"), "y");
  EXPECT_TRUE(alone.leader());
  EXPECT_EQ(alone.kind(), "shards");
}

TEST(Distributed, ShardTodoIsItsStridedShareLessWhatIsDone) {
  LocalComm shard(1, 3);
  Distribution d(shard, {});
  std::size_t share = 0;
  const auto todo = d.todo({0, 1, 2, 3, 5, 6, 8}, 9, &share);  // 4 and 7 are done
  EXPECT_EQ(share, 3u);                                        // inputs 1, 4, 7
  EXPECT_EQ(todo, (std::vector<std::size_t>{1}));
  EXPECT_EQ(d.mode(), "shards");
  EXPECT_THROW(Distribution(shard, DistributionOptions{DistributionMode::dynamic_chunks, 0, 600}), ConfigError);
  EXPECT_THROW(parse_distribution_mode("round-robin"), ConfigError);
  EXPECT_EQ(parse_distribution_mode(to_string(DistributionMode::dynamic_chunks)), DistributionMode::dynamic_chunks);
  EXPECT_EQ(parse_distribution_mode(to_string(DistributionMode::static_share)), DistributionMode::static_share);
  LocalComm one;
  Distribution single(one, {});
  EXPECT_FALSE(single.active());
  EXPECT_EQ(single.todo({2, 3}, 4, &share), (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(share, 4u);
  EXPECT_EQ(single.chunk_for(100000, 8, 2), 256u);
  EXPECT_EQ(single.chunk_for(10, 8, 2), 32u);
}

TEST(Distributed, ShardsComeFromFlagsThenSlurmVariables) {
  ::unsetenv("SLURM_PROCID");
  ::unsetenv("SLURM_NTASKS");
  auto s = resolve_shards(-1, 0, false);
  EXPECT_EQ(s.count, 1);
  s = resolve_shards(2, 5, false);
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 5);
  EXPECT_THROW(resolve_shards(5, 5, false), ConfigError);
  EXPECT_THROW(resolve_shards(1, 0, false), ConfigError);
  ::setenv("SLURM_PROCID", "3", 1);
  ::setenv("SLURM_NTASKS", "4", 1);
  s = resolve_shards(-1, 0, false);
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.from, vecbench::ShardOrigin::slurm);
  s = resolve_shards(0, 2, false);  // flags win
  EXPECT_EQ(s.count, 2);
  std::ostringstream log;
  auto c = open_process_group(-1, 0, nullptr, log);
  EXPECT_EQ(c->rank(), 3);
  EXPECT_EQ(c->size(), 4);
  EXPECT_FALSE(c->connected());
  EXPECT_NE(log.str().find("shard 3 of 4 (from SLURM_PROCID/SLURM_NTASKS)"), std::string::npos) << log.str();
  ::setenv("SLURM_NTASKS", "1", 1);  // a one-task job: no sharding
  EXPECT_EQ(resolve_shards(-1, 0, false).count, 1);
  ::unsetenv("SLURM_PROCID");
  ::unsetenv("SLURM_NTASKS");
}

TEST(Distributed, RankWritersUseTheirOwnFilesAndResumeCountsEveryRank) {
  const fs::path d = tmpdir("rankfiles");
  SyntheticSource src(6);
  std::vector<float> f(4, 1.0f);
  {
    WriterOptions w;
    w.format = OutputFormat::shards;
    w.out_dir = d;
    w.shard_rows = 2;
    w.rank = 1;
    OutputWriter a(src, w);
    EXPECT_EQ(a.pending().size(), 6u);
    for (std::size_t i : {1, 3, 5}) a.on_features(i, f.data(), 4);
    a.on_error(0, "synthetic:0: broken on purpose");
    a.finish();
  }
  EXPECT_TRUE(fs::exists(d / "manifest-r0001.jsonl"));
  EXPECT_TRUE(fs::exists(d / "shard-r0001-00000.npy"));
  EXPECT_TRUE(fs::exists(d / "shard-r0001-00001.npy"));
  EXPECT_FALSE(fs::exists(d / "manifest.jsonl"));
  {
    WriterOptions w;  // another rank (or one process) later: rank 1's work counts as done
    w.format = OutputFormat::shards;
    w.out_dir = d;
    w.rank = 0;
    OutputWriter b(src, w);
    EXPECT_EQ(b.pending(), (std::vector<std::size_t>{0, 2, 4}));
    WriterOptions w1 = w;
    w1.rank = 1;
    OutputWriter again(src, w1);  // rank 1 again: numbering goes on after its earlier shards
    again.on_features(2, f.data(), 4);
    again.finish();
  }
  EXPECT_TRUE(fs::exists(d / "shard-r0001-00002.npy"));
  const auto m = merge_manifests(
      {d}, d, {"synthetic:5", "synthetic:4", "synthetic:3", "synthetic:2", "synthetic:1", "synthetic:0"});
  EXPECT_EQ(m.inputs, 5u);
  EXPECT_EQ(m.ok, 4u);
  EXPECT_EQ(m.errors, 1u);
  const auto lines = read_jsonl(d / "manifest.jsonl");
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0]["input"], "synthetic:5");  // in the given order
  EXPECT_EQ(lines[4]["status"], "error");
  EXPECT_EQ(lines[3]["shard"], "shard-r0001-00000.npy");
  fs::remove_all(d);
}

TEST(Distributed, MergePrefersOkLinesWithDataAndRewritesPathsForAnotherDirectory) {
  const fs::path d = tmpdir("merge");
  fs::create_directories(d / "a");
  fs::create_directories(d / "b");
  const float x[2] = {1, 2};
  npy::save_f32(d / "a" / "x.npy", x, {2});  // complete data (a cut or non-.npy file would be dropped)
  std::ofstream(d / "a" / "manifest-r0000.jsonl")
      << R"({"input":"img10.jpg","status":"error","error":"img10.jpg: truncated JPEG"})"
         "\n"
      << R"({"input":"img2.jpg","output":"gone.npy","status":"ok"})"
         "\n"
      << R"({"input":"img2.jpg","status":"error","error":"img2.jpg: not an image"})"
         "\n"
      << "{\"input\":\"cut by a ki";
  std::ofstream(d / "b" / "manifest-r0001.jsonl") << R"({"input":"img10.jpg","output":"../a/x.npy","status":"ok"})"
                                                     "\n";
  const auto m = merge_manifests({d / "a", d / "b"}, d / "out");
  EXPECT_EQ(m.inputs, 2u);
  EXPECT_EQ(m.ok, 1u);
  EXPECT_EQ(m.dropped, 1u);
  const auto lines = read_jsonl(d / "out" / "manifest.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["input"], "img2.jpg");  // natural order: 2 before 10
  EXPECT_EQ(lines[0]["status"], "error");
  EXPECT_EQ(lines[1]["status"], "ok");
  EXPECT_EQ(lines[1]["output"], "../a/x.npy");  // relative to out/
  EXPECT_TRUE(fs::exists(d / "out" / lines[1]["output"].get<std::string>()));
  EXPECT_TRUE(natural_less("synthetic:2", "synthetic:10"));
  EXPECT_FALSE(natural_less("b", "a10"));
  fs::remove_all(d);
}

TEST(Distributed, CombinedSamplesHoldTotalsEveryRankAndTheScalingEfficiency) {
  RunStats a, b;
  a.images_ok = 6;
  a.wall_s = 2.0;
  a.batch_latency_ms = {10, 20, 30};
  a.devices = {{"cpu", 6, 3, 1.5, 0.75, 0}};
  b.images_ok = 2;
  b.images_failed = 1;
  b.wall_s = 4.0;
  b.batch_latency_ms = {40};
  b.devices = {{"cpu", 2, 1, 0.5, 0.125, 0}};
  const auto ja = rank_sample_json(a, 0, 0, "n1", 2, "static"), jb = rank_sample_json(b, 0, 1, "n2", 2, "static", 3);
  const std::vector<std::vector<double>> lat = {a.batch_latency_ms, b.batch_latency_ms};
  const auto c = combine_samples({jb, ja}, &lat);
  EXPECT_EQ(c["images"], 8);
  EXPECT_EQ(c["failed"], 1);
  EXPECT_DOUBLE_EQ(c["wall_s"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(c["images_per_s"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(c["latency_ms"]["p50"].get<double>(), 25.0);
  ASSERT_EQ(c["ranks"]["per_rank"].size(), 2u);
  EXPECT_EQ(c["ranks"]["per_rank"][0]["host"], "n1");  // by rank
  EXPECT_EQ(c["ranks"]["per_rank"][1]["chunks"], 3);
  EXPECT_DOUBLE_EQ(c["ranks"]["scaling_efficiency"].get<double>(), 2.0 / (3.0 + 0.5));
  EXPECT_EQ(c["devices"][1]["name"], "r0/cpu");
  // The combined sample is a valid result sample (the strict reader takes it).
  json run = {{"id", "strategy=sequential"},
              {"params", {{"strategy", "sequential"}}},
              {"status", "ok"},
              {"samples", {c}},
              {"summary",
               {{"images_per_s", {{"median", 2}, {"min", 2}, {"max", 2}, {"rel_spread", 0}, {"count", 1}}},
                {"wall_s", {{"median", 4}, {"min", 4}, {"max", 4}, {"rel_spread", 0}, {"count", 1}}}}}};
  json file = {{"schema_version", 1},
               {"name", "x"},
               {"meta",
                {{"vecbench_version", "0"},
                 {"git_sha", "x"},
                 {"date_utc", "d"},
                 {"host", "h"},
                 {"cpu_model", "c"},
                 {"cpu_cores", 2}}},
               {"config", {{"requested", json::object()}, {"effective", json::object()}}},
               {"runs", {run}}};
  const ResultFile f = result_from_json(file, "combined");
  ASSERT_TRUE(f.runs[0].samples[0].ranks.has_value());
  EXPECT_EQ(f.runs[0].samples[0].ranks->per_rank[1].chunks, 3);
  EXPECT_EQ(json(f)["runs"][0]["samples"][0]["ranks"], c["ranks"]);  // round trip

  // Merging two shard result files gives the same totals; an error in one makes the run an error.
  json f0 = file, f1 = file;
  f0["runs"][0]["samples"] = {rank_sample_json(a, 0, 0, "n1", 2, "shards")};
  f1["runs"][0]["samples"] = {rank_sample_json(b, 0, 1, "n2", 2, "shards")};
  f0["runs"][0]["verification"] = {
      {"reference", "sequential"}, {"compared_images", 6}, {"max_abs_diff", 0.0}, {"max_rel_diff", 0.0}};
  f1["runs"][0]["verification"] = {
      {"reference", "sequential"}, {"compared_images", 2}, {"max_abs_diff", 1e-6}, {"max_rel_diff", 1e-7}};
  std::ostringstream log;
  auto m = merge_result_files({f0, f1}, {"s0.json", "s1.json"}, &log);
  EXPECT_EQ(m["runs"][0]["samples"][0]["images"], 8);
  EXPECT_DOUBLE_EQ(m["runs"][0]["summary"]["images_per_s"]["median"].get<double>(), 2.0);
  EXPECT_EQ(m["runs"][0]["verification"]["compared_images"], 8);
  EXPECT_EQ(m["meta"]["merged_from"][1]["file"], "s1.json");
  EXPECT_EQ(log.str(), "");
  m = merge_result_files({f0}, {"s0.json"}, &log);  // half the shards
  EXPECT_NE(log.str().find("fewer ranks"), std::string::npos) << log.str();
  f1["runs"][0]["status"] = "error";
  f1["runs"][0]["reason"] = "cpu#0: out of memory";
  m = merge_result_files({f0, f1}, {"s0.json", "s1.json"});
  EXPECT_EQ(m["runs"][0]["status"], "error");
  EXPECT_EQ(m["runs"][0]["reason"], "s1.json: cpu#0: out of memory");
}

TEST(Distributed, TestHookParsesRankAndHang) {
  ::setenv("VECBENCH_TEST_DIE_AFTER", "3@1", 1);
  EXPECT_EQ(die_after_from_env(1).n, 3);
  EXPECT_EQ(die_after_from_env(0).n, -1);
  ::setenv("VECBENCH_TEST_DIE_AFTER", "2:hang", 1);
  EXPECT_EQ(die_after_from_env(5).n, 2);
  EXPECT_TRUE(die_after_from_env(5).hang);
  ::unsetenv("VECBENCH_TEST_DIE_AFTER");
  EXPECT_EQ(die_after_from_env(0).n, -1);
}

// Rank 0's progress line shows the job's counts: the other ranks' progress threads send theirs
// (their last counts also when they stop), and rank 0 adds the latest of each to its own.
TEST(Distributed, RankZeroProgressShowsTheWholeJob) {
  ThreadGroup g(3);
  ThreadComm c0(g, 0), c1(g, 1), c2(g, 2);
  JobProgress j0(c0), j1(c1), j2(c2);
  ASSERT_TRUE(j0.active());
  ProgressOptions p1, p2;
  p1.interval_s = 0.2;  // --progress 0.2: publish as often as rank 0 draws
  p2.interval_s = 30;   // the plain-line default: still once a second
  j1.hook(p1);
  j2.hook(p2);
  EXPECT_EQ(p1.interval_s, 0.0);  // the other ranks draw no line of their own
  EXPECT_DOUBLE_EQ(p1.publish_every_s, 0.2);
  EXPECT_DOUBLE_EQ(p2.publish_every_s, 1.0);
  ASSERT_TRUE(p1.publish && p2.publish && !p1.remote);
  p1.publish_every_s = p2.publish_every_s = 0.01;
  p1.manual_ticks = true;  // rank 1 publishes when the test ticks it; rank 2 on its timer
  const float f[2] = {1, 2};
  {
    MemorySink m1(10), m2(10);
    std::ostringstream quiet1, quiet2;
    ProgressSink s1(m1, 10, p1, quiet1), s2(m2, 10, p2, quiet2);
    for (std::size_t i = 0; i < 2; ++i) s1.on_features(i, f, 2);
    ASSERT_TRUE(s1.tick());                                               // published as it goes, before the end
    EXPECT_EQ(j0.others(), (std::pair<std::size_t, std::size_t>{2, 0}));  // rank 2 has had nothing yet
    for (std::size_t i = 2; i < 4; ++i) s1.on_features(i, f, 2);
    s2.on_features(0, f, 2);
    s2.on_error(1, "bad");
    s1.stop();
    s2.stop();
    EXPECT_EQ(quiet1.str() + quiet2.str(), "");
  }
  EXPECT_EQ(j0.others(), (std::pair<std::size_t, std::size_t>{6, 1}));  // 4 + 2 done, 1 failed
  ProgressOptions p0;
  p0.interval_s = 0.01;
  p0.manual_ticks = true;  // the line is drawn when the test ticks, not when a sleep was long enough
  j0.hook(p0);
  ASSERT_TRUE(p0.remote && !p0.publish);
  MemorySink m0(12);
  std::ostringstream out;
  ProgressSink s0(m0, 12, p0, out);
  s0.on_features(0, f, 2);
  ASSERT_TRUE(s0.tick());
  s0.stop();
  EXPECT_EQ(out.str().rfind("vecbench: job (3 ranks): 7/12 (58.3%)", 0), 0u) << out.str();
  EXPECT_NE(out.str().find(", 1 failed\n"), std::string::npos) << out.str();
  j0.drain();
  int src = -1;
  std::string left;
  EXPECT_FALSE(c0.recv(src, kTagProgress, left, 0));  // nothing left behind
}
