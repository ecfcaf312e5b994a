// Comparisons on the golden files (tests/data/compare, made by make_golden.py): verdicts, exit
// codes, p-values, geomean, normalize_by ratios and the reference-run rule, markdown.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>

#include "build_paths.hpp"
#include "vecbench/results/compare.hpp"

namespace fs = std::filesystem;
using namespace vecbench;

namespace {

const fs::path kGolden = fs::path(VECBENCH_SOURCE_DIR) / "tests" / "data" / "compare";
const std::string kTail = " batch=1 threads=1 resize=tf-legacy input=files";
const std::string kSeq = "strategy=sequential devices=cpu" + kTail;
const std::string kSeq2 = "strategy=sequential devices=cpu batch=1 threads=2 resize=tf-legacy input=files";
const std::string kDp2 = "strategy=data-parallel devices=cpu/2" + kTail;
const std::string kPipe = "strategy=pipeline devices=cpu/2" + kTail;
const std::string kCuda = "strategy=data-parallel devices=cuda:0/2" + kTail;
const std::string kExt = "strategy=external:torchserve devices=cpu batch=1";

ResultFile golden(const std::string& name) { return load_result(kGolden / (name + ".json")); }

const RunComparison& row(const CompareReport& r, const std::string& id) {
  for (const auto& c : r.runs)
    if (c.id == id) return c;
  throw std::runtime_error("no row " + id);
}

CompareReport cmp(const std::string& neu, const std::string& normalize_by = "", double threshold = 0.1) {
  CompareOptions o;
  o.normalize_by = normalize_by;
  o.threshold = threshold;
  return compare_results(golden("base"), golden(neu), o);
}

/// A file of runs with the given params (as "k=v" words) and per-rep images/s.
ResultFile synthetic(const std::vector<std::pair<std::string, std::vector<double>>>& runs) {
  ResultFile f;
  f.name = "synthetic";
  for (const auto& [words, ips] : runs) {
    RunResult r;
    r.id = words;
    std::istringstream in(words);
    for (std::string w; in >> w;) {
      const std::string k = w.substr(0, w.find('=')), v = w.substr(w.find('=') + 1);
      const bool number = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
      EXPECT_EQ(read_param(r.params, k, number ? json(std::stoll(v)) : json(v)), "") << w;
    }
    for (std::size_t i = 0; i < ips.size(); ++i) {
      Sample s;
      s.rep = static_cast<std::int64_t>(i);
      s.images = 10;
      s.images_per_s = ips[i];
      s.wall_s = 10 / ips[i];
      r.samples.push_back(s);
    }
    summarize_run(r);
    f.runs.push_back(r);
  }
  return f;
}

}  // namespace

TEST(CompareResults, VerdictsOnGoldenFiles) {
  const auto faster = cmp("new_faster");
  EXPECT_EQ(row(faster, kDp2).verdict, Verdict::faster);
  EXPECT_EQ(row(faster, kSeq).verdict, Verdict::same);
  EXPECT_EQ(row(faster, kCuda).verdict, Verdict::unknown);  // skipped on both sides
  EXPECT_NE(row(faster, kCuda).note.find("skipped: no CUDA device available"), std::string::npos);
  EXPECT_EQ(faster.only_in_base, std::vector<std::string>{"strategy=data-parallel devices=cpu/8" + kTail});
  EXPECT_EQ(faster.only_in_new, std::vector<std::string>{"strategy=data-parallel devices=cpu/3" + kTail});
  EXPECT_EQ(compare_exit_code(faster), 0);

  const auto slower = cmp("new_slower");
  EXPECT_EQ(row(slower, kDp2).verdict, Verdict::slower);
  // Pipeline: 5% slower and significant, but under the 10% threshold.
  EXPECT_LT(row(slower, kPipe).p_value, 0.05);
  EXPECT_EQ(row(slower, kPipe).verdict, Verdict::same);
  EXPECT_EQ(compare_exit_code(slower), 1);
  // A 4% threshold makes the pipeline regression count too.
  EXPECT_EQ(row(cmp("new_slower", "", 0.04), kPipe).verdict, Verdict::slower);

  // Median 11% lower but the reps overlap widely: not significant -> SAME.
  const auto noisy = cmp("new_noisy");
  EXPECT_LT(row(noisy, kDp2).change, -0.1);
  EXPECT_GT(row(noisy, kDp2).p_value, 0.05);
  EXPECT_GT(row(noisy, kDp2).spread, 0.5);
  EXPECT_EQ(row(noisy, kDp2).verdict, Verdict::same);
  EXPECT_EQ(compare_exit_code(noisy), 0);

  // 2 reps (< min_reps 3): UNKNOWN even for a halved throughput.
  const auto few = cmp("few_reps");
  for (const auto& c : few.runs) EXPECT_EQ(c.verdict, Verdict::unknown) << c.id;
  EXPECT_NE(row(few, kDp2).note.find("too few reps: 5 vs 2"), std::string::npos);
  EXPECT_EQ(compare_exit_code(few), 0);
}

// A run judged noisy (experiment/validity.hpp) supports no verdict: UNKNOWN with the reason, and
// exit status 3 when nothing is SLOWER. Recorded samples (the golden files) with verdicts set.
TEST(CompareResults, ANoisyRunIsUnknownWithItsReasonAndItsOwnExitStatus) {
  auto with_verdict = [](ResultFile f, const std::string& id, std::vector<NoiseCause> causes) {
    for (auto& r : f.runs)
      if (r.id == id) r.validity = Validity{ValidityVerdict::noisy, "made noisy by the test", std::move(causes)};
    return f;
  };
  CompareOptions o;
  // The same file on both sides, its data-parallel run measured on a busy machine in the new one:
  // UNKNOWN, not SAME, and exit 3.
  const auto busy = compare_results(golden("base"), with_verdict(golden("base"), kDp2, {NoiseCause::foreign_cpu}), o);
  EXPECT_EQ(row(busy, kDp2).verdict, Verdict::unknown);
  EXPECT_TRUE(row(busy, kDp2).noisy);
  EXPECT_EQ(row(busy, kDp2).note, "new run noisy: made noisy by the test");
  EXPECT_EQ(row(busy, kSeq).verdict, Verdict::same);
  EXPECT_EQ(compare_exit_code(busy), kCompareNoisy);
  // An injected slowdown elsewhere is still SLOWER, and that decides the exit status.
  const auto slower =
      compare_results(golden("base"), with_verdict(golden("new_slower"), kPipe, {NoiseCause::foreign_cpu}), o);
  EXPECT_EQ(row(slower, kDp2).verdict, Verdict::slower);
  EXPECT_EQ(row(slower, kPipe).verdict, Verdict::unknown);
  EXPECT_EQ(compare_exit_code(slower), kCompareRegression);
  // The noisy run itself, slowed down: UNKNOWN, never SLOWER (a busy machine cannot say).
  const auto noisy_slow =
      compare_results(golden("base"), with_verdict(golden("new_slower"), kDp2, {NoiseCause::steal}), o);
  EXPECT_EQ(row(noisy_slow, kDp2).verdict, Verdict::unknown);
  // Normalized within each file, the spread alone is weighed by the U test (the ratios'), a busy
  // machine still is UNKNOWN, on the run or on its reference.
  o.normalize_by = "strategy=sequential";
  const auto spread =
      compare_results(golden("base"), with_verdict(golden("new_slower"), kDp2, {NoiseCause::spread}), o);
  EXPECT_EQ(row(spread, kDp2).verdict, Verdict::slower);
  const auto ref =
      compare_results(with_verdict(golden("base"), kSeq, {NoiseCause::foreign_cpu}), golden("new_slower"), o);
  EXPECT_EQ(row(ref, kDp2).verdict, Verdict::unknown);
  EXPECT_EQ(row(ref, kDp2).note, "base reference run noisy: made noisy by the test");
  o.normalize_by.clear();
  EXPECT_EQ(
      row(compare_results(golden("base"), with_verdict(golden("base"), kDp2, {NoiseCause::spread}), o), kDp2).verdict,
      Verdict::unknown);
}

TEST(CompareResults, ChangeSpreadAndPValue) {
  const auto report = cmp("new_slower");
  const auto& c = row(report, kDp2);
  EXPECT_DOUBLE_EQ(c.base.median, 18.0);
  EXPECT_NEAR(c.neu.median, 14.4, 1e-9);
  EXPECT_NEAR(c.change, -0.2, 1e-9);
  EXPECT_NEAR(c.p_value, 2.0 / 252.0, 1e-12);  // 5 vs 5, fully separated, exact
  EXPECT_NEAR(c.spread, 0.4 / 18.0, 1e-9);     // (18.2 - 17.8) / 18; new has the same rel. spread
  EXPECT_EQ(c.base_values.size(), 5u);
}

TEST(CompareResults, GeometricMeanOfMedianRatios) {
  const auto faster = cmp("new_faster");
  EXPECT_EQ(faster.geomean_count, 6u);  // ok runs present in both files
  EXPECT_NEAR(faster.geomean_ratio, std::pow(1.2, 1.0 / 6.0), 1e-9);
  const auto other = cmp("new_other_host");
  EXPECT_NEAR(other.geomean_ratio, 0.5, 1e-12);
}

TEST(CompareResults, NormalizeByComparesSpeedupsWithinEachFile) {
  // Raw images/s: the slower machine makes every run SLOWER.
  const auto raw = cmp("new_other_host");
  EXPECT_EQ(row(raw, kDp2).verdict, Verdict::slower);
  EXPECT_EQ(compare_exit_code(raw), 1);
  EXPECT_NE(compare_markdown(raw).find("not comparable across machines"), std::string::npos);

  // Normalized by the sequential run of the same file: nothing changed.
  const auto norm = cmp("new_other_host", "strategy=sequential");
  EXPECT_EQ(compare_exit_code(norm), 0);
  const auto& c = row(norm, kDp2);
  EXPECT_EQ(c.verdict, Verdict::same);
  EXPECT_EQ(c.base_reference, kSeq);  // differs only in devices; threads=2 run differs in two
  EXPECT_EQ(c.new_reference, kSeq);
  const std::vector<double> ratios = {18.0 / 10.0, 18.2 / 10.1, 17.8 / 9.9, 18.1 / 10.2, 17.9 / 9.8};
  ASSERT_EQ(c.base_values.size(), ratios.size());
  for (std::size_t i = 0; i < ratios.size(); ++i) EXPECT_DOUBLE_EQ(c.base_values[i], ratios[i]);
  EXPECT_EQ(c.new_values, c.base_values);  // halving both sides leaves the ratios exactly equal
  EXPECT_DOUBLE_EQ(row(norm, "strategy=data-parallel devices=cpu/4" + kTail).base.median, 3.0);
  // The reference runs are left out of the table; the external peer's reference is ambiguous.
  EXPECT_EQ(norm.reference_runs, (std::vector<std::string>{kSeq, kSeq2}));
  EXPECT_THROW(row(norm, kSeq), std::runtime_error);
  EXPECT_EQ(row(norm, kExt).verdict, Verdict::unknown);
  EXPECT_NE(row(norm, kExt).note.find("ambiguous reference"), std::string::npos);

  // A real regression of the speedup is still found.
  const auto slower = cmp("new_slower", "strategy=sequential");
  EXPECT_EQ(row(slower, kDp2).verdict, Verdict::slower);
  EXPECT_NEAR(row(slower, kDp2).neu.median, 1.44, 1e-9);
  EXPECT_EQ(compare_exit_code(slower), 1);
}

TEST(CompareResults, ReferenceRunRule) {
  const auto f = synthetic({
      {"strategy=sequential devices=cpu batch=1", {10, 10, 10}},
      {"strategy=sequential devices=cpu batch=8", {20, 20, 20}},
      {"strategy=sequential devices=cpu/2 batch=8", {22, 22, 22}},
      {"strategy=dp devices=cpu/4 batch=1", {18, 18, 18}},
      {"strategy=dp devices=cpu/2 batch=8", {30, 30, 30}},
      {"strategy=dp devices=cpu/2 batch=1", {30, 30, 30}},
  });
  const auto filter = parse_params_filter("strategy=sequential");
  std::string why;
  // Exact match (same devices and batch) wins.
  EXPECT_EQ(find_reference_run(f, f.runs[4], filter, &why), &f.runs[2]);
  // No exact match: the unique closest one (differs in devices only; the others in two params).
  EXPECT_EQ(find_reference_run(f, f.runs[3], filter, &why), &f.runs[0]);
  // Two candidates at the same distance (devices differ / batch differs): ambiguous.
  EXPECT_EQ(find_reference_run(f, f.runs[5], filter, &why), nullptr);
  EXPECT_NE(why.find("ambiguous"), std::string::npos) << why;
  // No candidate at all.
  EXPECT_EQ(find_reference_run(f, f.runs[3], parse_params_filter("strategy=none"), &why), nullptr);
  EXPECT_NE(why.find("no run matches"), std::string::npos);
  // Per-rep division by the reference.
  EXPECT_EQ(compared_values(f.runs[4], &f.runs[2]), (std::vector<double>{30.0 / 22, 30.0 / 22, 30.0 / 22}));
}

TEST(CompareResults, ParamsFilterParsing) {
  const auto f = parse_params_filter("strategy=sequential,devices=cpu");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1].first, "devices");
  EXPECT_EQ(f[1].second, "cpu");
  EXPECT_TRUE(parse_params_filter("").empty());
  EXPECT_THROW(parse_params_filter("strategy"), ConfigError);
  EXPECT_THROW(parse_params_filter("strategy=sequential,"), ConfigError);
  EXPECT_THROW(parse_params_filter("=x"), ConfigError);
  const ResultFile empty;
  CompareOptions bad;
  bad.alpha = 0;
  EXPECT_THROW(compare_results(empty, empty, bad), ConfigError);
  bad = CompareOptions{};
  bad.min_reps = 0;
  EXPECT_THROW(compare_results(empty, empty, bad), ConfigError);
  bad = CompareOptions{};
  bad.normalize_by = "strategy";
  EXPECT_THROW(compare_results(empty, empty, bad), ConfigError);
}

TEST(CompareResults, ThreeRepsCannotReachTheDefaultAlpha) {
  const auto base = synthetic({{"strategy=dp devices=cpu/2", {20, 20.1, 19.9}}});
  const auto neu = synthetic({{"strategy=dp devices=cpu/2", {10, 10.1, 9.9}}});
  auto r = compare_results(base, neu, CompareOptions{});
  EXPECT_EQ(r.runs[0].verdict, Verdict::unknown);  // smallest possible p is 0.1
  EXPECT_NE(r.runs[0].note.find("can never reach p < 0.05"), std::string::npos) << r.runs[0].note;
  CompareOptions loose;
  loose.alpha = 0.15;
  r = compare_results(base, neu, loose);
  EXPECT_EQ(r.runs[0].verdict, Verdict::slower);
  EXPECT_EQ(compare_exit_code(r), 1);
}

TEST(CompareResults, Markdown) {
  const std::string md = compare_markdown(cmp("new_slower"));
  EXPECT_NE(md.find("| run | base | new | change | spread | p | verdict |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `" + kDp2 + "` | 18.00 | 14.40 | -20.0% | 2.2% | 0.00794 | SLOWER |"), std::string::npos) << md;
  EXPECT_NE(md.find("| **geomean** (6 runs, new/base) | | | "), std::string::npos) << md;
  EXPECT_NE(md.find("1 SLOWER, 0 FASTER of 8 runs"), std::string::npos) << md;
  EXPECT_NE(md.find("base run error: replica 5"), std::string::npos) << md;
  const std::string norm = compare_markdown(cmp("new_other_host", "strategy=sequential"));
  EXPECT_NE(norm.find("| 1.800x | 1.800x | +0.0% |"), std::string::npos) << norm;
  EXPECT_NE(norm.find("Reference runs (not compared):"), std::string::npos) << norm;
  EXPECT_EQ(norm.find("not comparable across machines"), std::string::npos);
  const std::string faster = compare_markdown(cmp("new_faster"));
  EXPECT_NE(faster.find("Only in base:\n- `strategy=data-parallel devices=cpu/8"), std::string::npos) << faster;
  EXPECT_NE(faster.find("Only in new:\n- `strategy=data-parallel devices=cpu/3"), std::string::npos) << faster;
}

// --metric: any Sample field of its table with a direction; lower-is-better ones are judged that
// way, and a memory figure says BETTER/WORSE.
TEST(Compare, MetricFromTheFieldTableJudgedByItsDirection) {
  const std::vector<double> same_speed = {10, 10.1, 9.9, 10.05, 9.95};
  ResultFile base = synthetic({{"strategy=a", same_speed}}), neu = synthetic({{"strategy=a", same_speed}});
  for (std::size_t i = 0; i < 5; ++i) {
    base.runs[0].samples[i].peak_rss_bytes = 1000 + static_cast<std::int64_t>(i);
    neu.runs[0].samples[i].peak_rss_bytes = 500 + static_cast<std::int64_t>(i);  // half the memory
    base.runs[0].samples[i].setup_s = 1.0 + 0.01 * static_cast<double>(i);
    neu.runs[0].samples[i].setup_s = 2.0 + 0.01 * static_cast<double>(i);  // twice the set-up
  }
  CompareOptions o;
  EXPECT_EQ(compare_results(base, neu, o).runs[0].verdict, Verdict::same);  // images_per_s by default
  o.metric = "peak_rss_bytes";
  const CompareReport rss = compare_results(base, neu, o);
  EXPECT_EQ(rss.runs[0].verdict, Verdict::faster);
  EXPECT_NEAR(rss.runs[0].change, -0.5, 0.01);
  EXPECT_EQ(compare_exit_code(rss), 0);
  const std::string md = compare_markdown(rss);
  EXPECT_NE(md.find("| BETTER |"), std::string::npos) << md;
  EXPECT_NE(md.find("lower is better"), std::string::npos) << md;
  o.metric = "setup_s";
  const CompareReport setup = compare_results(base, neu, o);
  EXPECT_EQ(setup.runs[0].verdict, Verdict::slower);
  EXPECT_EQ(compare_exit_code(setup), kCompareRegression);
  EXPECT_NE(compare_markdown(setup).find("| SLOWER |"), std::string::npos);
  o.metric = "rep";  // in the table, but no direction: not a metric
  EXPECT_THROW(compare_results(base, neu, o), ConfigError);
  std::vector<std::string> keys;
  for (const SampleMetric& m : sample_metrics()) keys.push_back(m.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"wall_s", "images_per_s", "peak_rss_bytes", "setup_s"}));
}

// The CI regression stage's question on recorded samples (results/baseline/ci.json, a quiet
// machine): the same file again is SAME for every run; the same file with data-parallel's
// repetitions 25 % slower (time x 1.25) is SLOWER for that run alone, normalized as the stage
// does (tools/regression.sh: --normalize-by strategy=sequential --threshold 0.15).
TEST(CompareResults, RecordedCiRunsWithAnInjected25PercentSlowdownAreSlower) {
  const ResultFile base = load_result(fs::path(VECBENCH_SOURCE_DIR) / "results" / "baseline" / "ci.json");
  CompareOptions o;
  o.normalize_by = "strategy=sequential";
  o.threshold = 0.15;
  const auto same = compare_results(base, base, o);
  EXPECT_EQ(compare_exit_code(same), 0);
  ResultFile slowed = base;
  int changed = 0;
  for (RunResult& r : slowed.runs) {
    if (r.params.strategy != "data-parallel") continue;
    for (Sample& s : r.samples) {
      s.wall_s *= 1.25;
      s.images_per_s /= 1.25;
    }
    summarize_run(r);
    ++changed;
  }
  ASSERT_EQ(changed, 1);
  const auto got = compare_results(base, slowed, o);
  ASSERT_EQ(got.runs.size(), 3u);  // naive, sharded, data-parallel (sequential is the reference)
  for (const auto& c : got.runs) {
    const bool dp = c.id.find("strategy=data-parallel") == 0;
    EXPECT_EQ(c.verdict, dp ? Verdict::slower : Verdict::same) << c.id;
    if (dp) {
      EXPECT_NEAR(c.change, 1 / 1.25 - 1, 0.01) << c.id;
    }
  }
  EXPECT_EQ(compare_exit_code(got), 1);
}
