// WeightSource (core/base/weight_source.hpp): a model's weight source parsed once from the text
// its export records, and that text written back unchanged.
#include <gtest/gtest.h>

#include <string>

#include "vecbench/core/base/weight_source.hpp"

using vecbench::WeightOrigin;
using vecbench::WeightSource;

TEST(WeightSource, EachOriginFromTheExportsText) {
  const struct {
    const char* text;
    WeightOrigin origin;
    const char* detail;
  } cases[] = {{"seed:0", WeightOrigin::synthetic, "0"},
               {"seed:12", WeightOrigin::synthetic, "12"},
               {"weights:pt_inception-2015-12-05-6726825d.pth", WeightOrigin::checkpoint,
                "pt_inception-2015-12-05-6726825d.pth"},
               {"from-tf:classify_image_graph_def.pb", WeightOrigin::tf_graph, "classify_image_graph_def.pb"},
               {"", WeightOrigin::unknown, ""},
               {"hub:facebookresearch/dinov2", WeightOrigin::other, ""},  // another version's: kept
               {"Seed:1", WeightOrigin::other, ""},                       // prefixes are exact
               {"xseed:1", WeightOrigin::other, ""}};
  for (const auto& c : cases) {
    const WeightSource w = WeightSource::parse(c.text);
    EXPECT_EQ(w.origin(), c.origin) << c.text;
    EXPECT_EQ(w.detail(), c.detail) << c.text;
    EXPECT_EQ(w.text(), c.text) << "written back as recorded";
    EXPECT_EQ(w.synthetic(), c.origin == WeightOrigin::synthetic) << c.text;
    EXPECT_EQ(w.known(), c.origin != WeightOrigin::unknown) << c.text;
  }
  EXPECT_EQ(WeightSource(), WeightSource::parse(""));
  EXPECT_NE(WeightSource::parse("seed:0"), WeightSource::parse("seed:1"));
}

TEST(WeightSource, OnlySyntheticWeightsCarryTheNote) {
  const std::string note = WeightSource::parse("seed:7").note();
  EXPECT_EQ(note.rfind("synthetic weights (seed 7): not Inception's trained features", 0), 0u) << note;
  EXPECT_NE(note.find("tools/export_inception.py --from-tf"), std::string::npos) << note;
  for (const char* t : {"", "weights:w.pth", "from-tf:g.pb", "seed"}) EXPECT_EQ(WeightSource::parse(t).note(), "") << t;
}
