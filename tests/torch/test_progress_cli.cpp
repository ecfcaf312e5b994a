// `vecbench vectorize` as a whole job: progress, one line redrawn in place on a terminal (a pseudo-terminal
// made by `script`), plain lines every --progress seconds otherwise, nothing with --quiet; and
// no thrown-away warm-up.
#include <gtest/gtest.h>

#include "dist_util.hpp"

using namespace vecbench;
using namespace vecbench::disttest;

TEST(Progress, OnATerminalOneLineIsRedrawnInPlace) {
  if (sh("command -v script").rc != 0) GTEST_SKIP() << "script (bsdutils) not installed";
  const fs::path d = tmpdir("progress_tty");
  const std::string cmd = kExe + " vectorize --images synthetic:24 --out " + (d / "out").string() + " --warmup 0";
  const auto r = sh("script -qfec '" + cmd + "' /dev/null");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("\rvecbench: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("24/24 (100.0%)"), std::string::npos) << r.out;  // the final state, kept on screen
  EXPECT_NE(r.out.find("img/s now"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ETA"), std::string::npos) << r.out;
  fs::remove_all(d);
}

TEST(Progress, WithoutATerminalPlainLinesEverySecondsAndNoneWhenQuiet) {
  const fs::path d = tmpdir("progress_plain");
  const std::string base = kExe + " vectorize --images synthetic:24 --warmup 0 --out ";
  const auto r = sh(base + (d / "a").string() + " --progress 0.2");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.find('\r'), std::string::npos) << r.out;
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = r.out.find("/24 (", at)) != std::string::npos; ++at) ++lines;
  EXPECT_GE(lines, 2u) << r.out;
  EXPECT_NE(r.out.find(", 0 failed\n"), std::string::npos) << r.out;
  const auto q = sh(base + (d / "b").string() + " --progress 0.2 --quiet");
  ASSERT_EQ(q.rc, 0) << q.out;
  EXPECT_EQ(q.out.find("/24 ("), std::string::npos) << q.out;
  EXPECT_EQ(q.out.find("to do"), std::string::npos) << q.out;                      // no start line either
  EXPECT_NE(q.out.find("vectorize images=24 ok=24"), std::string::npos) << q.out;  // the result line stays
  fs::remove_all(d);
}

// Issue 13: vectorize throws no warm-up work away. The first real batch is the warm-up, and the
// features it gives equal those of the same image later in the run, on both CPU engines.
TEST(Vectorize, TheFirstBatchIsTheWarmUpAndItsFeaturesAreKeptEqualToLaterOnes) {
  const fs::path d = tmpdir("warm_first");
  for (const char* p : {"baboon.jpg", "fruits.jpg", "building.jpg", "messi5.jpg", "orange.jpg"})
    fs::copy_file(fs::path(kPhotos) / p, d / p);
  fs::copy_file(fs::path(kPhotos) / "baboon.jpg", d / "zz_baboon_again.jpg");  // same pixels, last in the run
  for (const std::string engine : {"torchscript", "onednn"}) {
    const fs::path out = d / ("out_" + engine);
    const auto r = sh(kExe + " vectorize --images " + d.string() + " --out " + out.string() +
                      " --strategy sequential --batch 2 --engine " + engine);
    if (engine == "onednn" && r.out.find("built without oneDNN") != std::string::npos) continue;
    ASSERT_EQ(r.rc, 0) << r.out;
    const auto first = npy::as_f32(npy::load(out / "baboon.jpg.npy"));
    const auto last = npy::as_f32(npy::load(out / "zz_baboon_again.jpg.npy"));
    ASSERT_EQ(first.size(), 2048u);
    EXPECT_TRUE(first == last) << engine << ": the warm-up batch gave other features than a later one";
  }
  const auto help = sh(kExe + " vectorize --help");
  EXPECT_NE(help.out.find("--warmup INT:INT in [0 - 1000]=0"), std::string::npos) << help.out;  // no extra warm-up
  fs::remove_all(d);
}
