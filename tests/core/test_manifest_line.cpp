// The fast readers a million-input store needs, held to the slow ones they replaced: a manifest
// line read by SAX into ManifestLine gives what nlohmann's DOM gives for every field readers use,
// on well-formed and odd lines alike; InputPathResolver gives canonical_input_path's strings.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "vecbench/dist/merge_manifests.hpp"
#include "vecbench/input/image_source.hpp"
#include "vecbench/output/manifest.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;

namespace {

/// What the readers took from a line before ManifestLine: each field through nlohmann's DOM.
ManifestLine line_from_dom(const nlohmann::json& j) {
  ManifestLine l;
  auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
  auto opt = [&](const char* k) {
    return j.contains(k) && j[k].is_string() ? std::optional<std::string>(j[k].get<std::string>()) : std::nullopt;
  };
  l.input = str("input");
  const std::string hex = str("input_hex");
  if (j.contains("input_hex") && j["input_hex"].is_string() && hex.size() % 2 == 0 &&
      hex.find_first_not_of("0123456789abcdef") == std::string::npos) {
    l.input.clear();
    for (std::size_t i = 0; i < hex.size(); i += 2)
      l.input += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  if (j.contains("status") && j["status"].is_string())
    l.status = find_enum<InputStatus>(j["status"].get<std::string>());
  l.fp = str("fp");
  l.output = opt("output");
  l.shard = opt("shard");
  if (j.contains("row") && j["row"].is_number_integer()) l.row = j["row"].get<long>();
  l.xxh3 = str("xxh3");
  l.names_data = j.contains("output") || j.contains("shard");
  if (j.contains("src")) {
    const auto& s = j["src"];
    l.src.present = true;
    if (s.is_object()) {
      if (s.contains("xxh3")) {
        l.src.has_xxh3 = true;
        l.src.xxh3 = s["xxh3"].is_string() ? s["xxh3"].get<std::string>() : std::string();
      }
      // A number as nlohmann's get<> reads it, a float only where the integer type holds it.
      auto i64 = [&](const char* k) -> std::optional<std::int64_t> {
        if (!s.contains(k) || !s[k].is_number()) return std::nullopt;
        if (s[k].is_number_integer()) return s[k].get<std::int64_t>();
        const double d = s[k].get<double>();
        return d >= -9.2e18 && d <= 9.2e18 ? std::optional<std::int64_t>(static_cast<std::int64_t>(d)) : std::nullopt;
      };
      auto u64 = [&](const char* k) -> std::optional<std::uint64_t> {
        if (!s.contains(k) || !s[k].is_number()) return std::nullopt;
        if (s[k].is_number_integer()) return s[k].get<std::uint64_t>();
        const double d = s[k].get<double>();
        return d >= 0 && d <= 1.8e19 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(d)) : std::nullopt;
      };
      if (i64("size") && i64("mtime_ns") && u64("ino") && u64("dev"))
        l.src.id = InputIdentity{*i64("size"), *i64("mtime_ns"), *u64("ino"), *u64("dev")};
    }
  }
  return l;
}

void expect_same(const ManifestLine& a, const ManifestLine& b, const std::string& text) {
  EXPECT_EQ(a.input, b.input) << text;
  EXPECT_EQ(a.status, b.status) << text;
  EXPECT_EQ(a.fp, b.fp) << text;
  EXPECT_EQ(a.output, b.output) << text;
  EXPECT_EQ(a.shard, b.shard) << text;
  EXPECT_EQ(a.row, b.row) << text;
  EXPECT_EQ(a.xxh3, b.xxh3) << text;
  EXPECT_EQ(a.names_data, b.names_data) << text;
  EXPECT_EQ(a.src.present, b.src.present) << text;
  EXPECT_EQ(a.src.id.has_value(), b.src.id.has_value()) << text;
  if (a.src.id && b.src.id) {
    EXPECT_TRUE(*a.src.id == *b.src.id) << text;
  }
  EXPECT_EQ(a.src.has_xxh3, b.src.has_xxh3) << text;
  EXPECT_EQ(a.src.xxh3, b.src.xxh3) << text;
}

}  // namespace

TEST(ManifestLine, ReadsWhatTheJsonDomReadsForEveryFieldReadersUse) {
  const std::vector<std::string> lines = {
      // What the writer writes: a vector file; a shard row with the input's identity and checksum.
      R"({"fp":"a91af9b1baf85c65","input":"/x/a.jpg","output":"a.jpg.npy","status":"ok"})",
      R"({"fp":"f","input":"/x/b.jpg","row":3,"shard":"shard-00001.npy","src":{"dev":2049,"ino":18446744073709551615,)"
      R"("mtime_ns":1733450000123456789,"size":1234},"status":"ok","xxh3":"0123456789abcdef"})",
      R"({"error":"cannot decode","fp":"f","input":"/x/c.jpg","status":"error"})",
      R"({"input":"/x/\ufffd.jpg","input_hex":"2f782fff2e6a7067","output":"d.npy","status":"ok"})",
      R"({"input":"/x/e.jpg","src":{"dev":1,"ino":2,"mtime_ns":3,"size":4,"xxh3":"feed"},"status":"ok"})",
      // Odd lines: every field of another type, missing, repeated or nested.
      R"({"input":"u","input_hex":"2f7","status":"ok"})",                      // odd hex length: "input"
      R"({"input":"u","input_hex":"2F78","status":"ok"})",                     // uppercase: not ours
      R"({"input":"u","input_hex":5,"status":"ok"})",                          // not a string
      R"({"input":7,"status":"done","fp":3,"output":["a"],"shard":{"x":1}})",  // all of the wrong type
      R"({"input":"r","row":2.5,"shard":"s.npy","status":"ok"})",              // a row that is no integer
      R"({"input":"r","row":-1,"shard":"s.npy","status":"error"})",
      R"({"input":"s","src":[1,2],"status":"ok"})",  // src not an object
      R"({"input":"s","src":"x","status":"ok"})",
      R"({"input":"s","src":{"dev":1,"ino":2,"size":4},"status":"ok"})",  // one field missing
      R"({"input":"s","src":{"dev":1,"ino":2,"mtime_ns":"3","size":4},"status":"ok"})",
      R"({"input":"s","src":{"dev":1,"ino":2,"mtime_ns":3.0,"size":4,"xxh3":7},"status":"ok"})",
      R"({"input":"s","src":{"more":{"size":9,"input":"no"},"dev":1,"ino":2,"mtime_ns":3,"size":4}})",
      R"({"input":"first","input":"second","status":"error","status":"ok"})",  // the last of a key wins
      R"({"nested":{"input":"no","status":"ok"},"list":[{"input":"no"}],"input":"yes"})",
      R"({"input":"escaped \"quote\" \\ and \u00e9","output":"t\/u.npy"})", R"({})",
      R"( { "input" : "w" , "row" : 0 , "status" : "ok" } )",  // whitespace
      R"({"input":"n","row":-0,"src":{"dev":0,"ino":9999999999999999999,"mtime_ns":-123456789012345678,"size":0}})",
      R"({"input":"d","a":{"b":{"c":{"d":{"e":1}}}},"status":"ok"})",  // deeper than the quick scan goes
      R"({"input":"l","flag":true,"none":null,"x":false,"status":"ok","row":7})",
      R"({"input":"x","src":{"dev":1,"ino":2,"mtime_ns":3,"size":4,"xxh3":{}},"output":null})",  // an object checksum
      R"({"input":"x","src":{"dev":1,"ino":2,"mtime_ns":3,"size":5,"size":[]},"shard":[]})",     // the last size: no
                                                                                                 // number
      R"({"input":"f","src":{"dev":1,"ino":-1.5,"mtime_ns":1e300,"size":4.5},"row":1e2})",       // floats out of range
      R"({"input":"f","src":{"dev":1.0,"ino":2e3,"mtime_ns":-3.5,"size":4.5}})",                 // floats that fit
  };
  for (const auto& text : lines)
    for (const bool quick : {true, false}) {  // the quick scan (plain lines) and nlohmann's SAX parser
      ManifestLine l;
      ASSERT_TRUE(detail::parse_manifest_line_by(text, l, quick)) << text;
      expect_same(l, line_from_dom(nlohmann::json::parse(text)), text + (quick ? " (quick)" : " (SAX)"));
    }
  // What the readers ask of it.
  ManifestLine l;
  ASSERT_TRUE(parse_manifest_line(lines[1], l));
  EXPECT_TRUE(l.ok());
  EXPECT_EQ(*l.data_file(), "shard-00001.npy");
  EXPECT_EQ(l.src.id->ino, 18446744073709551615ull);
  ASSERT_TRUE(parse_manifest_line(lines[3], l));
  EXPECT_EQ(l.input, "/x/\xff.jpg");
  ASSERT_TRUE(parse_manifest_line(lines[2], l));
  EXPECT_FALSE(l.ok());
  EXPECT_EQ(l.data_file(), nullptr);
}

TEST(ManifestLine, WhatIsNotAJsonObjectIsNoLine) {
  ManifestLine l;
  for (const std::string text :
       {"", "[]", "[{\"input\":\"a\"}]", "\"a\"", "7", "{\"input\":\"a\"", "{\"input\":\"a\"} {}", "{\"input\":\"a\",}",
        "not json", "{\"row\":01}", "{\"row\":-}", "{\"row\":1.}", "{'input':'a'}", "{\"input\":\"a\tb\"}",
        "{\"input\":\"\xff\"}", "{\"input\" \"a\"}", "{\"a\":{\"b\":{}}"})
    for (const bool quick : {true, false}) EXPECT_FALSE(detail::parse_manifest_line_by(text, l, quick)) << text;
  EXPECT_TRUE(parse_manifest_line("  {\"input\":\"a\"}  ", l));
}

TEST(ManifestLine, EachLineIsFoundWithItsOffsetAndThePartialLastOneIsLeftOut) {
  const fs::path d = vecbench::testing::fresh_temp_dir("manifest-lines");
  const fs::path m = d / "manifest.jsonl";
  const std::string a = R"({"input":"a","status":"ok"})", b = "not json", c = R"({"input":"c","status":"error"})";
  std::ofstream(m, std::ios::binary) << a << "\n"
                                     << b << "\n"
                                     << c << "\n"
                                     << R"({"input":"partial")";
  std::vector<ManifestLine> got;
  for_each_manifest_line(m, [&](const ManifestLine& l) { got.push_back(l); });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].input, "a");
  EXPECT_EQ(got[1].input, "c");
  struct stat st {};
  ASSERT_EQ(::stat(m.c_str(), &st), 0);
  ManifestLineReader reader(m, st.st_dev, st.st_ino);
  EXPECT_EQ(reader.text(got[0].offset, got[0].length), a);
  EXPECT_EQ(reader.text(got[1].offset, got[1].length), c);
  EXPECT_THROW(reader.text(1u << 20, 5), IoError);  // past the end
  EXPECT_THROW(ManifestLineReader(d / "none.jsonl", st.st_dev, st.st_ino).text(0, 1), IoError);
  // The file at the path replaced since it was scanned (another inode): refused, not read.
  std::ofstream(d / "new.jsonl", std::ios::binary) << a << "\n";
  fs::rename(d / "new.jsonl", m);
  ManifestLineReader stale(m, st.st_dev, st.st_ino);
  try {
    (void)stale.text(got[0].offset, got[0].length);
    FAIL() << "read a line from a replaced manifest";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("replaced"), std::string::npos) << e.what();
  }
  fs::remove_all(d);
}

TEST(InputPathResolver, GivesCanonicalInputPathsStringsForLinksMissingFilesAndLoops) {
  const fs::path d = vecbench::testing::fresh_temp_dir("resolver");
  fs::create_directories(d / "real" / "sub");
  for (const char* n : {"a.jpg", "sub/b.jpg"}) std::ofstream(d / "real" / n) << "x";
  fs::create_directory_symlink(d / "real", d / "linked");                  // a folder that is a link
  fs::create_symlink(d / "real" / "a.jpg", d / "real" / "file-link.jpg");  // a file that is a link
  fs::create_symlink("../real/sub/b.jpg", d / "real" / "sub" / "rel-link.jpg");
  fs::create_symlink(d / "loop1", d / "loop2");
  fs::create_symlink(d / "loop2", d / "loop1");
  fs::create_symlink(d / "nowhere.jpg", d / "real" / "dangling.jpg");
  const std::vector<fs::path> paths = {
      d / "real" / "a.jpg",
      d / "linked" / "a.jpg",
      d / "linked" / "sub" / "b.jpg",
      d / "real" / "file-link.jpg",
      d / "linked" / "file-link.jpg",
      d / "real" / "sub" / "rel-link.jpg",
      d / "real" / "missing.jpg",
      d / "gone" / "x" / "y.jpg",
      d / "linked" / "sub" / ".." / "a.jpg",
      d / "real" / "." / "a.jpg",
      d / "loop1" / "a.jpg",
      d / "loop1",
      d / "real" / "dangling.jpg",
      d / "real" / "sub" / "",
      fs::path("relative.jpg"),
      fs::path("/"),
      fs::path(d.string() + "//real/a.jpg"),
      fs::path(d.string() + "/real/a.jpg/."),
      fs::path("/a.jpg"),
  };
  InputPathResolver resolve;
  for (int pass = 0; pass < 2; ++pass)  // the second pass from the folder cache
    for (const auto& p : paths) EXPECT_EQ(resolve(p.string()), canonical_input_path(p)) << p;
  EXPECT_EQ(resolve((d / "linked" / "sub" / "b.jpg").string()), fs::canonical(d / "real" / "sub" / "b.jpg").string());
  fs::remove_all(d);
}

TEST(MergeManifests, ReadsLinesBackFromMoreManifestsThanItKeepsOpenAndLeavesErrorLinesAsWritten) {
  // 70 rank manifests (merge keeps 64 open at once), one error line each that names an output
  // file: merged in natural order, each line the bytes its rank wrote (an error line's paths are
  // not rewritten for the merged folder: it points at no vector).
  const fs::path d = vecbench::testing::fresh_temp_dir("merge-many");
  fs::create_directories(d / "a");
  std::vector<std::string> written;
  for (int r = 69; r >= 0; --r) {
    char name[32];
    std::snprintf(name, sizeof name, "manifest-r%04d.jsonl", r);
    const std::string line =
        R"({"error":"bad","input":"in-)" + std::to_string(r) + R"(","output":"sub/o.npy","status":"error"})";
    std::ofstream(d / "a" / name) << line << "\n";
    written.insert(written.begin(), line);
  }
  const auto m = merge_manifests({d / "a"}, d / "out");
  EXPECT_EQ(m.files.size(), 70u);
  EXPECT_EQ(m.errors, 70u);
  EXPECT_EQ(m.inputs, 70u);
  std::ifstream in(d / "out" / "manifest.jsonl");
  std::vector<std::string> merged;
  for (std::string l; std::getline(in, l);) merged.push_back(l);
  EXPECT_EQ(merged, written);  // in-0, in-1, ..., in-69: natural order, bytes as written
  fs::remove_all(d);
}
