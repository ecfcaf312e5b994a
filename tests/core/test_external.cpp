// External peers of an experiment (run_external): the img/s, the images and the line the peer
// said them on (kept in the result: peers name their versions there), or the reason; and
// run_program, which starts a program without a shell (the report's plot script).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "vecbench/core/system/subprocess.hpp"
#include "vecbench/experiment/external.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;

TEST(External, ParsesRateImagesAndKeepsThePeersLine) {
  Experiment::External x;
  x.name = "peer";
  x.command = "echo loading; echo 'peer onnxruntime=1.31.1 batch=8 images=40 img_per_s=18.25'; echo done";
  const ExternalOutcome o = run_external(x);
  ASSERT_TRUE(o.ok) << o.reason;
  EXPECT_DOUBLE_EQ(o.images_per_s, 18.25);
  EXPECT_EQ(o.images, 40u);
  EXPECT_EQ(o.line, "peer onnxruntime=1.31.1 batch=8 images=40 img_per_s=18.25");
  EXPECT_TRUE(o.reason.empty());
  EXPECT_GE(o.wall_s, 0.0);
}

TEST(External, FirstLineAndNoTrailingNewline) {
  Experiment::External x;
  x.command = "printf 'img_per_s=2'";
  const ExternalOutcome o = run_external(x);
  ASSERT_TRUE(o.ok) << o.reason;
  EXPECT_DOUBLE_EQ(o.images_per_s, 2.0);
  EXPECT_EQ(o.line, "img_per_s=2");
}

TEST(External, AFailingPeerGivesItsExitStatusAndWords) {
  Experiment::External x;
  x.command = "echo 'peer: skipped: openvino is not installed'; exit 3";
  const ExternalOutcome o = run_external(x);
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.reason.find("exit status 3"), std::string::npos) << o.reason;
  EXPECT_NE(o.reason.find("openvino is not installed"), std::string::npos) << o.reason;
  EXPECT_TRUE(o.line.empty());
}

TEST(RunProgram, ArgumentsGoAsTheyAreAndBothOutputsReachTheLog) {
  const auto d = vecbench::testing::fresh_temp_dir("run_program");
  const std::string log = (d / "log.txt").string();
  auto slurp = [&] {
    std::ifstream in(log);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  // no shell: quotes, spaces and $ in an argument reach the program unchanged
  EXPECT_EQ(run_program({"printf", "%s|%s", "a 'b' \"c\"", "$HOME x"}, log), 0);
  EXPECT_EQ(slurp(), "a 'b' \"c\"|$HOME x");
  // stdout and stderr both land in the log, and the exit status comes back
  EXPECT_EQ(run_program({"sh", "-c", "echo out; echo err >&2; exit 3"}, log), 3);
  EXPECT_EQ(slurp(), "out\nerr\n");
  EXPECT_EQ(run_program({"/nonexistent/program"}, log), -1);
  fs::remove_all(d);
}
