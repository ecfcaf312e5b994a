// The version the binary prints is the newest release of CHANGELOG.md, and the changelog is a list
// of releases: "## X.Y.Z (YYYY-MM-DD)", newest first, each with Added / Changed / Fixed only.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "build_paths.hpp"
#include "vecbench_version.hpp"

namespace {

struct Release {
  std::tuple<int, int, int> version;
  std::string text, date;
  std::vector<std::string> sections;
};

std::vector<Release> releases(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  const std::regex head(R"(^## (([0-9]+)\.([0-9]+)\.([0-9]+)) \(([0-9]{4}-[0-9]{2}-[0-9]{2})\)$)");
  std::vector<Release> out;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.rfind("## ", 0) == 0) {
      EXPECT_TRUE(std::regex_match(line, m, head)) << "not a release heading: " << line;
      if (m.empty()) continue;
      out.push_back({{std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])}, m[1], m[5], {}});
    } else if (line.rfind("### ", 0) == 0) {
      EXPECT_FALSE(out.empty()) << "a section before any release: " << line;
      if (!out.empty()) out.back().sections.push_back(line.substr(4));
    }
  }
  return out;
}

TEST(Version, TheBinaryPrintsTheChangelogsNewestReleaseAndTheChangelogIsReleases) {
  const auto rel = releases(std::string(VECBENCH_SOURCE_DIR) + "/CHANGELOG.md");
  ASSERT_FALSE(rel.empty());
  EXPECT_EQ(rel.front().text, VECBENCH_VERSION)
      << "CMakeLists.txt's project(VERSION) and CHANGELOG.md's newest release";
  for (std::size_t i = 0; i < rel.size(); ++i) {
    EXPECT_FALSE(rel[i].sections.empty()) << rel[i].text << " lists nothing";
    for (const auto& s : rel[i].sections)
      EXPECT_TRUE(s == "Added" || s == "Changed" || s == "Fixed") << rel[i].text << ": section " << s;
    if (i == 0) continue;
    EXPECT_GT(rel[i - 1].version, rel[i].version) << "newest first: " << rel[i - 1].text << " then " << rel[i].text;
    EXPECT_GE(rel[i - 1].date, rel[i].date) << rel[i - 1].text << " then " << rel[i].text;
  }
}

}  // namespace
