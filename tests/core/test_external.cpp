// External peers of an experiment (run_external): the img/s, the images and the line the peer
// said them on (kept in the result: peers name their versions there), or the reason.
#include <gtest/gtest.h>

#include "vecbench/experiment/external.hpp"

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
