// merge_manifests over several folders (issue #63): which line of an input wins (a finished vector
// over a newer unfinished line of the same input content), lines copied byte for byte with only
// their data path rewritten, and the manifests read back through a bounded LRU set of open files.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "vecbench/core/files/npy.hpp"
#include "vecbench/dist/merge_manifests.hpp"
#include "vecbench/output/manifest_copy.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;

namespace {

std::vector<std::string> merged_lines(const fs::path& dir) {
  std::ifstream in(dir / "manifest.jsonl");
  std::vector<std::string> v;
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

void write_lines(const fs::path& file, const std::vector<std::string>& lines) {
  std::ofstream out(file, std::ios::binary);
  for (const auto& l : lines) out << l << "\n";
}

/// A manifest line's "src" (the input's identity) with this mtime and, when given, checksum.
std::string src_of(long mtime_ns, const std::string& xxh3 = "") {
  return R"({"size":10,"mtime_ns":)" + std::to_string(mtime_ns) + R"(,"ino":7,"dev":1)" +
         (xxh3.empty() ? "" : R"(,"xxh3":")" + xxh3 + "\"") + "}";
}

std::string ok_line(const std::string& input, const std::string& shard, int row, const std::string& src) {
  return R"({"input":")" + input + R"(","shard":")" + shard + R"(","row":)" + std::to_string(row) +
         R"(,"status":"ok")" + (src.empty() ? "" : R"(,"src":)" + src) + "}";
}

}  // namespace

TEST(MergeManifests, AFinishedVectorOutlivesANewerUnfinishedLineOfTheSameInput) {
  // Folder 1 finished every input's vector (shard x.npy complete); folder 2, scanned later, holds
  // an "ok" line of each whose shard was never finished (a run cut before it wrote cut.npy).
  const vecbench::testing::ScopedTempDir d("merge-unfinished");
  fs::create_directories(d.path / "one");
  fs::create_directories(d.path / "two");
  const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  npy::save_f32(d.path / "one" / "x.npy", x, {4, 2});
  write_lines(d.path / "one" / "manifest.jsonl",
              {ok_line("same.jpg", "x.npy", 0, src_of(100)), ok_line("touched.jpg", "x.npy", 1, src_of(100, "abc")),
               ok_line("legacy.jpg", "x.npy", 2, ""), ok_line("changed.jpg", "x.npy", 3, src_of(100))});
  write_lines(d.path / "two" / "manifest-r0000.jsonl",
              {ok_line("same.jpg", "cut.npy", 0, src_of(100)),            // the same content: the vector stays
               ok_line("touched.jpg", "cut.npy", 1, src_of(200, "abc")),  // touched, the same checksum: stays
               ok_line("legacy.jpg", "cut.npy", 2, ""),                   // neither recorded one: stays
               ok_line("changed.jpg", "cut.npy", 3, src_of(200))});       // rewritten since: superseded
  const auto m = merge_manifests({d.path / "one", d.path / "two"}, d.path / "out");
  EXPECT_EQ(m.dropped, 4u);
  EXPECT_EQ(m.ok, 3u);
  EXPECT_EQ(m.inputs, 3u);
  const auto lines = merged_lines(d.path / "out");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], ok_line("legacy.jpg", "../one/x.npy", 2, ""));
  EXPECT_EQ(lines[1], ok_line("same.jpg", "../one/x.npy", 0, src_of(100)));
  EXPECT_EQ(lines[2], ok_line("touched.jpg", "../one/x.npy", 1, src_of(100, "abc")));
  // Merged in place, one folder: the unfinished line written last is no newer finished vector either.
  write_lines(d.path / "one" / "manifest-r0001.jsonl", {ok_line("same.jpg", "cut.npy", 0, src_of(100))});
  const auto again = merge_manifests({d.path / "one"}, d.path / "one");
  EXPECT_EQ(again.ok, 4u);
  EXPECT_EQ(merged_lines(d.path / "one")[2], ok_line("same.jpg", "x.npy", 0, src_of(100)));
}

TEST(MergeManifests, LinesOfAnotherFolderKeepTheirBytesButTheirDataPath) {
  const vecbench::testing::ScopedTempDir d("merge-bytes");
  fs::create_directories(d.path / "a" / "sub");
  const float x[2] = {1, 2};
  npy::save_f32(d.path / "a" / "sub" / "x.npy", x, {2});
  // Keys in another order than vecbench writes, spaces, escapes, a float, non-ASCII text, keys
  // vecbench does not know (one nested, holding an "output" of its own), an escaped data path.
  const std::string head = "{ \"status\" :\"ok\",\t\"note\":\"caf\\u00e9 \\/ \\\"q\\\" \xc3\xa9 \xef\xbf\xbd\",";
  const std::string tail = " ,\"input\":\"a\\u0062c.jpg\", \"w\":1.50e0,\"meta\":{\"output\":\"x\",\"l\":[1,{}]} }";
  write_lines(d.path / "a" / "manifest.jsonl",
              {head + "\"output\":\"sub\\/x.npy\"" + tail,
               R"({"status":"error","input":"b.jpg","output":"sub\/gone.npy","error":"caf\u00e9"})"});
  const auto m = merge_manifests({d.path / "a"}, d.path / "out");
  EXPECT_EQ(m.ok, 1u);
  EXPECT_EQ(m.errors, 1u);
  const auto lines = merged_lines(d.path / "out");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], head + "\"output\":\"../a/sub/x.npy\"" + tail);  // only the value's bytes changed
  EXPECT_EQ(lines[1], R"({"status":"error","input":"b.jpg","output":"sub\/gone.npy","error":"caf\u00e9"})");
  // Merged in place: every byte as it was.
  merge_manifests({d.path / "a"}, d.path / "a");
  EXPECT_EQ(merged_lines(d.path / "a")[0], head + "\"output\":\"sub\\/x.npy\"" + tail);
  // The splice itself: a value left as it is keeps its bytes; the last of a repeated key too.
  const auto same = splice_string_values(R"({"shard":"s\/1.npy","shard":"t"})", {"shard"},
                                         [](const std::string&, const std::string& v) { return v; });
  ASSERT_TRUE(same);
  EXPECT_EQ(*same, R"({"shard":"s\/1.npy","shard":"t"})");
  EXPECT_FALSE(splice_string_values("[1]", {"shard"}, [](const std::string&, const std::string& v) { return v; }));
}

TEST(MergeManifests, OpensEachManifestOncePerWindowHoweverTheNamesInterleave) {
  // 5 rank manifests whose inputs interleave (in-0 in rank 0, in-1 in rank 1, ...), merged with 2
  // manifests open at most: read a window at a time in file order, each opened once.
  const vecbench::testing::ScopedTempDir d("merge-opens");
  fs::create_directories(d.path / "a");
  std::vector<std::string> all;
  for (int r = 0; r < 5; ++r) {
    std::vector<std::string> lines;
    for (int i = r; i < 20; i += 5)
      lines.push_back(R"({"input":"in-)" + std::to_string(i) + R"(","status":"error","error":"x"})");
    char name[32];
    std::snprintf(name, sizeof name, "manifest-r%04d.jsonl", r);
    write_lines(d.path / "a" / name, lines);
  }
  MergeLimits few;
  few.open_manifests = 2;
  const auto m = merge_manifests({d.path / "a"}, d.path / "out", {}, few);
  EXPECT_EQ(m.inputs, 20u);
  EXPECT_EQ(m.opens, 5u);
  const auto lines = merged_lines(d.path / "out");
  ASSERT_EQ(lines.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_NE(lines[i].find("\"in-" + std::to_string(i) + "\""), std::string::npos);
  few.window_lines = 1;  // a line at a time in name order: round robin over 5 files, 2 open
  EXPECT_EQ(merge_manifests({d.path / "a"}, d.path / "out", {}, few).opens, 20u);
  EXPECT_EQ(merged_lines(d.path / "out"), lines);
  few.window_lines = 0;  // no window at all still reads a line at a time
  few.window_bytes = 0;
  EXPECT_EQ(merge_manifests({d.path / "a"}, d.path / "out", {}, few).inputs, 20u);
  EXPECT_EQ(merged_lines(d.path / "out"), lines);

  // The cache closes the manifest read least recently: 0 1 0 2 0 1 opens 0, 1, 2 (closing 1, not
  // the 0 just read) and 1 again: 4 opens (closing in opening order would take 5).
  ManifestReaderCache cache(2);
  for (int r = 0; r < 3; ++r) {
    char name[32];
    std::snprintf(name, sizeof name, "manifest-r%04d.jsonl", r);
    struct stat st {};
    ASSERT_EQ(::stat((d.path / "a" / name).c_str(), &st), 0);
    cache.add(d.path / "a" / name, st.st_dev, st.st_ino);
  }
  for (const std::uint32_t f : {0u, 1u, 0u, 2u, 0u, 1u}) EXPECT_EQ(cache.text(f, 0, 1), "{");
  EXPECT_EQ(cache.opens(), 4u);
}
