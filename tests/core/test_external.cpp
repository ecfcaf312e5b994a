// External peers of an experiment (detail::run_external): the img/s, the images and the line the
// peer said them on (kept in the result: peers name their versions there), or the reason.
#include <gtest/gtest.h>
#include "vecbench/experiment/experiment_runner.hpp"

using namespace vecbench;

TEST(External, ParsesRateImagesAndKeepsThePeersLine) {
  Experiment::External x;
  x.name = "peer";
  x.command = "echo loading; echo 'peer onnxruntime=1.31.1 batch=8 images=40 img_per_s=18.25'; echo done";
  std::string reason, line;
  double wall = 0;
  std::size_t images = 0;
  EXPECT_DOUBLE_EQ(detail::run_external(x, reason, wall, images, line), 18.25);
  EXPECT_EQ(images, 40u);
  EXPECT_EQ(line, "peer onnxruntime=1.31.1 batch=8 images=40 img_per_s=18.25");
  EXPECT_TRUE(reason.empty());
  EXPECT_GE(wall, 0.0);
}

TEST(External, FirstLineAndNoTrailingNewline) {
  Experiment::External x;
  x.command = "printf 'img_per_s=2'";
  std::string reason, line;
  double wall = 0;
  std::size_t images = 0;
  EXPECT_DOUBLE_EQ(detail::run_external(x, reason, wall, images, line), 2.0);
  EXPECT_EQ(line, "img_per_s=2");
}

TEST(External, AFailingPeerGivesItsExitStatusAndWords) {
  Experiment::External x;
  x.command = "echo 'peer: skipped: openvino is not installed'; exit 3";
  std::string reason, line;
  double wall = 0;
  std::size_t images = 0;
  EXPECT_LT(detail::run_external(x, reason, wall, images, line), 0);
  EXPECT_NE(reason.find("exit status 3"), std::string::npos) << reason;
  EXPECT_NE(reason.find("openvino is not installed"), std::string::npos) << reason;
  EXPECT_TRUE(line.empty());
}
