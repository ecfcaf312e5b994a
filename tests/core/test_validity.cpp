// The machine's state (core/system/machine_load.hpp) on recorded /proc files and on this machine, and
// the validity verdict (experiment/validity.hpp) on recorded samples.
#include <gtest/gtest.h>

#include <fstream>

#include "vecbench/core/system/machine_load.hpp"
#include "vecbench/experiment/validity.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;

namespace {

std::string write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
  return p.string();
}

RunResult run_with(const std::vector<double>& ips, double foreign = 0.0, double steal = 0.0) {
  RunResult r;
  r.id = "strategy=sequential";
  for (std::size_t i = 0; i < ips.size(); ++i) {
    Sample s;
    s.rep = static_cast<std::int64_t>(i);
    s.images = 10;
    s.images_per_s = ips[i];
    s.wall_s = 10 / ips[i];
    s.foreign_cpu_share = i == 0 ? foreign : 0.0;
    s.steal_share = i == 0 ? steal : 0.0;
    r.samples.push_back(s);
  }
  summarize_run(r);
  return r;
}

}  // namespace

TEST(MachineLoad, OtherProcessesAndStealAsSharesOfTheMachineFromProcStat) {
  vecbench::testing::ScopedTempDir d("machine_load");
  // user nice system idle iowait irq softirq steal guest guest_nice
  const auto a = read_cpu_times(write_file(d.path / "a", "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n"));
  const auto b = read_cpu_times(write_file(d.path / "b", "cpu  300 0 100 1200 100 0 0 100 0 0\n"));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->total, 1000u);
  EXPECT_EQ(a->idle, 850u);
  EXPECT_EQ(b->steal, 100u);
  // 800 ticks passed: 450 idle, 100 stolen, 250 busy of which this process used 1 s = 100 ticks.
  const LoadShares s = load_shares(*a, *b, 1.0, 100.0);
  EXPECT_DOUBLE_EQ(s.foreign_cpu, 150.0 / 800.0);
  EXPECT_DOUBLE_EQ(s.steal, 100.0 / 800.0);
  EXPECT_DOUBLE_EQ(load_shares(*a, *b, 5.0, 100.0).foreign_cpu, 0.0);  // more than the busy time: 0, not < 0
  EXPECT_DOUBLE_EQ(load_shares(*b, *a, 0.0, 100.0).foreign_cpu, 0.0);  // no time passed
  EXPECT_FALSE(read_cpu_times(write_file(d.path / "bad", "intr 1 2 3\n")));
  EXPECT_FALSE(read_cpu_times((d.path / "missing").string()));
}

TEST(MachineLoad, LoadAverageAndIsaFromTheirFiles) {
  vecbench::testing::ScopedTempDir d("machine_isa");
  EXPECT_EQ(load_average(write_file(d.path / "loadavg", "0.50 1.25 2.00 1/100 123\n")),
            (std::vector<double>{0.5, 1.25, 2.0}));
  EXPECT_TRUE(load_average((d.path / "missing").string()).empty());
  const std::string cpuinfo =
      "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu sse2 avx2 fma avx512f avx512_vnni amx_tile\n"
      "processor\t: 1\nflags\t\t: fpu\n";
  EXPECT_EQ(cpu_isa(write_file(d.path / "cpuinfo", cpuinfo)),
            (std::vector<std::string>{"avx2", "fma", "avx512f", "avx512_vnni", "amx_tile"}));
  // The same reader gives the model name the results and the tune profiles record.
  EXPECT_EQ(cpu_model((d.path / "cpuinfo").string()), "Some CPU");
  EXPECT_EQ(cpu_model((d.path / "missing").string()), "unknown");
  EXPECT_TRUE(cpu_isa((d.path / "missing").string()).empty());
}

TEST(MachineLoad, AProbeOnThisMachineGivesSharesBetweenZeroAndOne) {
  if (!read_cpu_times()) GTEST_SKIP() << "no /proc/stat here";
  LoadProbe p;
  p.start();
  volatile double x = 0;
  for (int i = 0; i < 20'000'000; ++i) x = x + 1e-9 * i;  // this process's own work is not foreign
  const auto s = p.stop();
  ASSERT_TRUE(s);
  EXPECT_GE(s->foreign_cpu, 0.0);
  EXPECT_LE(s->foreign_cpu, 1.0);
  EXPECT_GE(s->steal, 0.0);
  EXPECT_LE(s->steal, 1.0);
}

TEST(Validity, QuietRepetitionsAreValidAndEachCauseMakesARunNoisy) {
  const auto quiet = judge_validity(run_with({10.0, 10.2, 9.9}, 0.01));
  ASSERT_TRUE(quiet);
  EXPECT_EQ(quiet->verdict, ValidityVerdict::valid);
  EXPECT_EQ(quiet->reason, "spread 3.0 %, other processes up to 1.0 % of the CPU, steal up to 0.0 %");
  EXPECT_TRUE(quiet->causes.empty());

  const auto spread = judge_validity(run_with({10.0, 12.0, 8.0}));
  EXPECT_EQ(spread->verdict, ValidityVerdict::noisy);
  EXPECT_EQ(spread->causes, std::vector<NoiseCause>{NoiseCause::spread});
  EXPECT_EQ(spread->reason, "repetitions spread 40.0 % > 10.0 %");

  const auto busy = judge_validity(run_with({10.0, 10.1, 10.0}, 0.3, 0.08));
  EXPECT_EQ(busy->verdict, ValidityVerdict::noisy);
  EXPECT_EQ(busy->causes, (std::vector<NoiseCause>{NoiseCause::foreign_cpu, NoiseCause::steal}));
  EXPECT_NE(busy->reason.find("other processes took 30.0 % of the CPU > 10.0 %"), std::string::npos) << busy->reason;
  EXPECT_NE(busy->reason.find("steal 8.0 % > 5.0 %"), std::string::npos) << busy->reason;

  const auto one = judge_validity(run_with({10.0}));  // one repetition: no spread to judge
  EXPECT_EQ(one->verdict, ValidityVerdict::valid);
  RunResult skipped = run_with({10.0});
  skipped.status = RunStatus::skipped;
  EXPECT_FALSE(judge_validity(skipped));
  ValidityLimits strict;
  strict.max_rel_spread = 0.01;
  EXPECT_EQ(judge_validity(run_with({10.0, 10.2, 9.9}), strict)->verdict, ValidityVerdict::noisy);
}

// The spread judged is the width of the median's confidence interval: the whole range up to 8
// repetitions (as before), the 95 % interval from 9 on, so that many repetitions with one
// disturbed outlier each way are valid while a wide middle is still noisy.
TEST(Validity, FromNineRepetitionsTheSpreadIsTheMedianIntervalNotTheRange) {
  const std::vector<double> tight = {10.0, 10.1, 9.9, 10.05, 9.95, 10.02, 9.98, 10.0};
  auto with = [&](std::vector<double> v, std::initializer_list<double> extra) {
    v.insert(v.end(), extra);
    return judge_validity(run_with(v));
  };
  EXPECT_EQ(with(tight, {13.0})->verdict, ValidityVerdict::valid) << "9 reps: one outlier is outside the 96 % interval";
  EXPECT_EQ(with({10.0, 10.1, 9.9, 10.05, 9.95, 10.02, 10.0}, {13.0})->verdict, ValidityVerdict::noisy)
      << "8 reps: the interval is the whole range, outlier included";
  EXPECT_EQ(with(tight, {7.0, 13.0, 7.5})->verdict, ValidityVerdict::noisy) << with(tight, {7.0, 13.0, 7.5})->reason;
  RunResult old = run_with({10.0, 10.1, 9.9, 10.05, 9.95, 10.02, 9.98, 10.0, 13.0});
  old.summary.images_per_s_median_ci.reset();  // a file written before the interval: the range
  EXPECT_EQ(judge_validity(old)->verdict, ValidityVerdict::noisy);
}
