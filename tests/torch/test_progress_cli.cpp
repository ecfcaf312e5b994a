// `vecbench vectorize` shows progress: one line redrawn in place on a terminal (a pseudo-terminal
// made by `script`), plain lines every --progress seconds otherwise, nothing with --quiet.
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
