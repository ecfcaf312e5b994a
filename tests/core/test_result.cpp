// Result files: golden files load, round-trip, bad input names file and key, schema versions,
// summaries, and the reader agrees with schema/result.schema.json on required/unknown keys.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include "build_paths.hpp"
#include "vecbench/results/result.hpp"
#include "vecbench/testing/temp_dir.hpp"

namespace fs = std::filesystem;
using vecbench::json;
using vecbench::ResultFormatError;

namespace {

const fs::path kGolden = fs::path(VECBENCH_SOURCE_DIR) / "tests" / "data" / "compare";

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

using TempDir = vecbench::testing::ScopedTempDir;

/// The message of the ResultFormatError that parsing `j` (as file `name`) throws, or "".
std::string parse_error(const json& j, const std::string& name = "bad.json") {
  try {
    vecbench::result_from_json(j, name);
  } catch (const ResultFormatError& e) {
    return e.what();
  }
  return "";
}

// For each (schema $def, place in `base`): removing each property fails exactly when the schema
// requires it, and an unknown key fails exactly when the schema is closed.
void expect_reader_agrees_with_schema(const json& schema, const json& base,
                                      const std::vector<std::pair<std::string, std::string>>& places) {
  for (const auto& [schema_ptr, data_ptr] : places) {
    const json& s = schema.at(json::json_pointer(schema_ptr));
    const json required = s.value("required", json::array());
    for (const auto& item : s.at("properties").items()) {
      SCOPED_TRACE(schema_ptr + " key " + item.key());
      json c = base;
      c.at(json::json_pointer(data_ptr)).erase(item.key());
      const bool is_required = std::find(required.begin(), required.end(), item.key()) != required.end();
      EXPECT_EQ(parse_error(c).empty(), !is_required) << parse_error(c);
    }
    json c = base;
    c.at(json::json_pointer(data_ptr))["no_such_key"] = 1;
    const bool closed = s.contains("additionalProperties") && s["additionalProperties"] == false;
    EXPECT_EQ(parse_error(c).empty(), !closed) << schema_ptr << ": " << parse_error(c);
  }
}

void expect_same(double a, double b) {
  if (std::isnan(a))
    EXPECT_TRUE(std::isnan(b));
  else
    EXPECT_DOUBLE_EQ(a, b);
}

}  // namespace

TEST(ResultIo, GoldenFilesLoadAndTheirSummariesMatchSummarizeRun) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kGolden)) {
    if (e.path().extension() != ".json") continue;
    ++n;
    SCOPED_TRACE(e.path().string());
    const vecbench::ResultFile f = vecbench::load_result(e.path());
    EXPECT_EQ(f.schema_version, vecbench::kResultSchemaVersion);
    for (const auto& run : f.runs) {
      vecbench::RunResult copy = run;
      vecbench::summarize_run(copy);
      expect_same(copy.summary.images_per_s.median, run.summary.images_per_s.median);
      expect_same(copy.summary.images_per_s.rel_spread, run.summary.images_per_s.rel_spread);
      expect_same(copy.summary.wall_s.max, run.summary.wall_s.max);
      EXPECT_EQ(copy.summary.images_per_s.count, run.summary.images_per_s.count);
      ASSERT_EQ(copy.summary.stage_s_per_image.size(), run.summary.stage_s_per_image.size());
      for (const auto& [k, v] : run.summary.stage_s_per_image) EXPECT_DOUBLE_EQ(copy.summary.stage_s_per_image[k], v);
      for (const auto& [k, v] : run.summary.latency_ms) expect_same(copy.summary.latency_ms[k].median, v.median);
    }
  }
  EXPECT_GE(n, 5);
}

TEST(ResultIo, RoundTripIsLossless) {
  const json original = read_json(kGolden / "base.json");
  const vecbench::ResultFile f = vecbench::load_result(kGolden / "base.json");
  EXPECT_EQ(json::parse(json(f).dump()), original);  // dump: NaN -> null, as in the file
  ASSERT_EQ(f.runs.size(), 8u);
  EXPECT_EQ(f.meta.host, "ref-box");
  EXPECT_EQ(f.meta.versions["libtorch"], "1.13.1");
  EXPECT_EQ(f.runs[5].status, vecbench::RunStatus::skipped);
  EXPECT_TRUE(std::isnan(f.runs[5].summary.images_per_s.median));
  ASSERT_TRUE(f.runs[2].verification.has_value());
  EXPECT_EQ(f.runs[2].verification->compared_images, 40);
  EXPECT_EQ(f.runs[2].samples[0].queue_depth.size(), 3u);
  EXPECT_EQ(f.runs[2].params.batch, 1);
  EXPECT_EQ(f.runs[2].params.text_of("batch"), "1");

  TempDir dir("result_roundtrip");
  vecbench::ResultFile g = f;
  g.meta.extra["os"] = "Debian 12";  // unknown meta keys survive
  vecbench::save_result(dir.path / "sub" / "r.json", g);
  const vecbench::ResultFile h = vecbench::load_result(dir.path / "sub" / "r.json");
  EXPECT_EQ(json(h).dump(), json(g).dump());
  EXPECT_EQ(h.meta.extra["os"], "Debian 12");
  for (const auto& e : fs::directory_iterator(dir.path / "sub"))  // the temp file was renamed away
    EXPECT_EQ(e.path().filename(), "r.json");
}

TEST(ResultIo, BadValuesNameTheFileAndTheKey) {
  TempDir dir("result_bad");
  json j = read_json(kGolden / "base.json");
  j["runs"][1]["samples"][2]["wall_s"] = "fast";
  std::ofstream(dir.path / "broken.json") << j.dump();
  try {
    vecbench::load_result(dir.path / "broken.json");
    FAIL() << "no error";
  } catch (const ResultFormatError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find((dir.path / "broken.json").string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("'runs[1].samples[2].wall_s'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected a number, got string"), std::string::npos) << msg;
  }

  const json base = read_json(kGolden / "base.json");
  auto mutated = [&](const std::function<void(json&)>& f) {
    json c = base;
    f(c);
    return parse_error(c);
  };
  EXPECT_NE(mutated([](json& c) { c["runs"][0].erase("id"); }).find("key 'runs[0].id': missing"), std::string::npos);
  EXPECT_NE(mutated([](json& c) { c["runs"][0]["status"] = "fine"; }).find("'runs[0].status': 'fine' is not one of"),
            std::string::npos);
  EXPECT_NE(mutated([](json& c) { c["runs"][5]["reason"] = ""; }).find("'runs[5].reason'"), std::string::npos);
  EXPECT_NE(mutated([](json& c) {
              c["runs"][0]["samples"][0]["imgs_per_s"] = 1;
            }).find("'runs[0].samples[0].imgs_per_s': unknown key"),
            std::string::npos);
  EXPECT_NE(mutated([](json& c) { c["runs"][3]["id"] = c["runs"][2]["id"]; }).find("duplicate run id"),
            std::string::npos);
  EXPECT_NE(mutated([](json& c) { c["meta"].erase("host"); }).find("'meta.host': missing"), std::string::npos);
  EXPECT_NE(mutated([](json& c) { c["runs"][0]["params"]["batch"] = json::array({1}); }).find("'runs[0].params.batch'"),
            std::string::npos);
  EXPECT_NE(mutated([](json& c) {
              c["runs"][0]["samples"][0]["images"] = 2.5;
            }).find("'runs[0].samples[0].images': expected an integer, got 2.5"),
            std::string::npos);
  EXPECT_NE(mutated([](json& c) {
              c["runs"][2]["samples"][0]["queue_depth"][1] = 3;
            }).find("'runs[2].samples[0].queue_depth[1]'"),
            std::string::npos);
  EXPECT_NE(mutated([](json& c) { c["runs"][0]["summary"]["images_per_s"]["count"] = -1; }).find("must be >= 0"),
            std::string::npos);
  EXPECT_NE(parse_error(json::array()).find("expected an object"), std::string::npos);
}

TEST(ResultParams, TypedFromTheFileAndBackAsItWas) {
  const json file = {{"strategy", "external:ort-b8"},
                     {"command", "python3 ort.py 8"},
                     {"devices", "cpu / 2, cuda:1"},
                     {"batch", 8},
                     {"threads", 0},
                     {"zeta", "z"},
                     {"alpha", 2.5}};
  vecbench::ResultParams p;
  for (const auto& it : file.items()) EXPECT_EQ(vecbench::read_param(p, it.key(), it.value()), "") << it.key();
  EXPECT_TRUE(p.is_external());
  EXPECT_FALSE(p.is_sequential());
  EXPECT_EQ(p.external, "ort-b8");
  EXPECT_EQ(p.strategy, "");
  EXPECT_EQ(p.strategy_label(), "external:ort-b8");
  EXPECT_EQ(p.batch, 8);
  EXPECT_EQ(p.threads, 0);
  EXPECT_EQ(p.other.size(), 2u);
  ASSERT_TRUE(p.devices.has_value());  // parsed, its text kept as the file wrote it
  EXPECT_EQ(p.devices->virtual_count(0), 3);
  EXPECT_TRUE(p.devices->any_cuda());
  // the known keys in a fixed order, then the others by name; numbers as text
  const std::vector<std::pair<std::string, std::string>> want = {{"strategy", "external:ort-b8"},
                                                                 {"devices", "cpu / 2, cuda:1"},
                                                                 {"batch", "8"},
                                                                 {"threads", "0"},
                                                                 {"command", "python3 ort.py 8"},
                                                                 {"alpha", "2.5"},
                                                                 {"zeta", "z"}};
  EXPECT_EQ(p.entries(), want);
  EXPECT_EQ(p.find("resize"), std::nullopt);
  EXPECT_EQ(p.text_of("alpha"), "2.5");
  EXPECT_EQ(vecbench::params_to_json(p), file);  // same keys, same JSON types
  EXPECT_EQ(vecbench::params_to_json(p).dump(), file.dump());

  vecbench::ResultParams q;
  EXPECT_EQ(vecbench::read_param(q, "strategy", "sequential"), "");
  EXPECT_TRUE(q.is_sequential());
  EXPECT_FALSE(q.is_external());
  EXPECT_EQ(vecbench::read_param(q, "batch", 4.0), "");  // an integral float is the integer
  EXPECT_EQ(q.batch, 4);
  EXPECT_EQ(vecbench::read_param(q, "resize", "pil-bicubic"), "");
  EXPECT_EQ(vecbench::read_param(q, "input", "predecoded"), "");
  EXPECT_EQ(q.resize, vecbench::ResizeMode::pil_bicubic);
  EXPECT_EQ(q.input, vecbench::SourceKind::predecoded);
  EXPECT_EQ(q.text_of("resize"), "pil-bicubic");
  EXPECT_EQ(vecbench::params_to_json(q)["input"], "predecoded");
}

TEST(ResultParams, WrongTypesAreRefusedWithTheKeyNamed) {
  vecbench::ResultParams p;
  EXPECT_NE(vecbench::read_param(p, "batch", "8").find("must be an integer"), std::string::npos);
  EXPECT_NE(vecbench::read_param(p, "threads", 1.5).find("must be an integer"), std::string::npos);
  EXPECT_NE(vecbench::read_param(p, "strategy", 3).find("must be a string"), std::string::npos);
  EXPECT_NE(vecbench::read_param(p, "resize", true).find("must be a string"), std::string::npos);
  EXPECT_NE(vecbench::read_param(p, "strategy", "external:").find("names no command"), std::string::npos);
  EXPECT_NE(vecbench::read_param(p, "colour", json::array()).find("a string or number"), std::string::npos);
  // closed settings: a value this build does not know is refused, listing the ones it knows
  EXPECT_NE(vecbench::read_param(p, "resize", "lanczos").find("unknown resize mode \"lanczos\" (use tf-legacy"),
            std::string::npos);
  EXPECT_NE(vecbench::read_param(p, "input", "video").find("unknown source kind"), std::string::npos);
  EXPECT_EQ(vecbench::read_param(p, "devices", "gpu:0"),
            "is not a devices spec: unknown device 'gpu:0' (use cpu, cpu/N, cuda, cuda:K, cuda:K/N)");
  EXPECT_FALSE(p.resize || p.input || p.devices);  // nothing half-set
  const json base = read_json(kGolden / "base.json");
  json c = base;
  c["runs"][1]["params"]["batch"] = "1";
  const std::string msg = parse_error(c);
  EXPECT_NE(msg.find("'runs[1].params.batch': must be an integer"), std::string::npos) << msg;
}

TEST(ResultIo, RejectsOtherSchemaVersions) {
  json j = read_json(kGolden / "base.json");
  j["schema_version"] = 2;
  const std::string msg = parse_error(j, "future.json");
  EXPECT_NE(msg.find("future.json: key 'schema_version': 2 is not supported"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reads schema_version 1 only"), std::string::npos) << msg;
  j["schema_version"] = "1";
  EXPECT_NE(parse_error(j).find("is not supported"), std::string::npos);
  j.erase("schema_version");
  EXPECT_NE(parse_error(j).find("not a vecbench result file"), std::string::npos);
}

TEST(ResultIo, UnreadableAndInvalidFiles) {
  TempDir dir("result_io");
  EXPECT_THROW(vecbench::load_result(dir.path / "missing.json"), vecbench::IoError);
  std::ofstream(dir.path / "junk.json") << "{ not json";
  EXPECT_THROW(vecbench::load_result(dir.path / "junk.json"), ResultFormatError);
  // nlohmann's get<> goes through from_json (errors then name "<json>").
  EXPECT_EQ(read_json(kGolden / "few_reps.json").get<vecbench::ResultFile>().runs.size(), 8u);
  EXPECT_THROW((void)json::object().get<vecbench::ResultFile>(), ResultFormatError);
}

TEST(ResultIo, SummarizeRun) {
  vecbench::RunResult r;
  for (int i = 0; i < 3; ++i) {
    vecbench::Sample s;
    s.rep = i;
    s.images = 10;
    s.wall_s = 1.0 + i;
    s.images_per_s = 10.0 / s.wall_s;
    s.stage_s = {{"decode", 0.5 * (i + 1)}, {"forward", 2.0}};
    s.latency_ms = {{"p50", 10.0 * (i + 1)}};
    r.samples.push_back(s);
  }
  vecbench::summarize_run(r);
  EXPECT_DOUBLE_EQ(r.summary.images_per_s.median, 5.0);
  EXPECT_DOUBLE_EQ(r.summary.images_per_s.min, 10.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.summary.wall_s.median, 2.0);
  EXPECT_DOUBLE_EQ(r.summary.latency_ms["p50"].max, 30.0);
  EXPECT_DOUBLE_EQ(r.summary.stage_s_per_image["decode"], 0.1);  // median of 0.05, 0.1, 0.15
  EXPECT_DOUBLE_EQ(r.summary.stage_s_per_image["forward"], 0.2);
}

// The reader and schema/result.schema.json agree: a key the schema requires is required by the
// reader, an optional one is optional, and objects closed by the schema reject unknown keys.
TEST(ResultIo, ReaderAgreesWithTheSchemaOnRequiredAndUnknownKeys) {
  const json schema = read_json(fs::path(VECBENCH_SOURCE_DIR) / "schema" / "result.schema.json");
  const json base = read_json(kGolden / "base.json");
  ASSERT_EQ(parse_error(base), "");
  const std::vector<std::pair<std::string, std::string>> places = {
      {"", ""},
      {"/properties/config", "/config"},
      {"/$defs/meta", "/meta"},
      {"/$defs/run", "/runs/2"},
      {"/$defs/run/properties/summary", "/runs/2/summary"},
      {"/$defs/summary", "/runs/2/summary/images_per_s"},
      {"/$defs/sample", "/runs/2/samples/0"},
      {"/$defs/device_sample", "/runs/2/samples/0/devices/0"},
      {"/$defs/verification", "/runs/2/verification"},
  };
  expect_reader_agrees_with_schema(schema, base, places);
}

// Every record with a field table has exactly the table's keys in the schema, required where the
// table says so: a metric added to a table without its schema entry (or the reverse) fails here.
template <class S>
void expect_table_matches_schema(const json& schema, const std::string& ptr) {
  SCOPED_TRACE(ptr);
  const json& s = schema.at(json::json_pointer(ptr));
  std::set<std::string> keys, required;
  vecbench::for_each_field(vecbench::field_table(S{}), [&](const auto& f) {
    keys.insert(f.key);
    if (f.need == vecbench::Need::required) required.insert(f.key);
  });
  std::set<std::string> schema_keys, schema_required;
  for (const auto& it : s.at("properties").items()) schema_keys.insert(it.key());
  for (const auto& k : s.value("required", json::array())) schema_required.insert(k.get<std::string>());
  EXPECT_EQ(keys, schema_keys);
  EXPECT_EQ(required, schema_required);
  EXPECT_EQ(s.value("additionalProperties", true), false);
}

TEST(ResultIo, FieldTablesMatchTheSchema) {
  const json schema = read_json(fs::path(VECBENCH_SOURCE_DIR) / "schema" / "result.schema.json");
  expect_table_matches_schema<vecbench::Sample>(schema, "/$defs/sample");
  expect_table_matches_schema<vecbench::DeviceSample>(schema, "/$defs/device_sample");
  expect_table_matches_schema<vecbench::RankSample>(schema, "/$defs/rank_sample");
  expect_table_matches_schema<vecbench::RanksInfo>(schema, "/$defs/ranks");
  expect_table_matches_schema<vecbench::Verification>(schema, "/$defs/verification");
  expect_table_matches_schema<vecbench::GpuInfo>(schema, "/$defs/meta/properties/gpus/items");
  expect_table_matches_schema<vecbench::TraceFigures>(schema, "/$defs/trace_figures");
  expect_table_matches_schema<vecbench::DeviceShare>(schema, "/$defs/trace_figures/properties/devices/items");
  expect_table_matches_schema<vecbench::Environment>(schema, "/$defs/meta/properties/environment");
  expect_table_matches_schema<vecbench::Validity>(schema, "/$defs/run/properties/validity");
  expect_table_matches_schema<vecbench::EffectiveSettings>(schema, "/$defs/effective");
  expect_table_matches_schema<vecbench::EffectiveDevice>(schema, "/$defs/effective/properties/devices/items");
}

TEST(ResultIo, EnvironmentValidityAndLoadRoundTripAndOlderFilesStillRead) {
  vecbench::ResultFile f = vecbench::load_result(kGolden / "base.json");  // written before these existed
  EXPECT_FALSE(f.meta.environment.has_value());
  EXPECT_FALSE(f.runs[0].validity.has_value());
  EXPECT_FALSE(vecbench::is_noisy(f.runs[0]));
  f.meta.environment = vecbench::Environment{"Release",           "-O3",
                                             "abc123def456",      true,
                                             {"avx2", "avx512f"}, {0.5, 0.25, 0.125},
                                             {1.5, 0.5, 0.25},    {{"torchscript", "AVX2"}, {"onednn", "avx512_core"}}};
  f.runs[0].validity = vecbench::Validity{vecbench::ValidityVerdict::noisy,
                                          "other processes took 30.0 % of the CPU > 10.0 %",
                                          {vecbench::NoiseCause::foreign_cpu}};
  f.runs[0].samples[0].foreign_cpu_share = 0.3;
  f.runs[0].samples[0].steal_share = 0.0;
  f.runs[0].stopping = vecbench::Stopping{"max_repetitions", 3, 9, 0.03};
  vecbench::summarize_run(f.runs[0]);  // the median's interval, as a run since it is written
  TempDir dir("result_environment");
  vecbench::save_result(dir.path / "r.json", f);
  const json j = read_json(dir.path / "r.json");
  EXPECT_EQ(j["meta"]["environment"]["cpu_isa"], json({"avx2", "avx512f"}));
  EXPECT_EQ(j["meta"]["environment"]["engine_isa"]["onednn"], "avx512_core");
  EXPECT_EQ(j["runs"][0]["validity"]["causes"], json({"foreign_cpu"}));
  EXPECT_EQ(j["runs"][0]["samples"][0]["foreign_cpu_share"], 0.3);
  EXPECT_FALSE(j["runs"][1].contains("validity"));
  EXPECT_EQ(j["runs"][0]["stopping"]["rule"], "max_repetitions");
  EXPECT_EQ(j["runs"][0]["summary"]["images_per_s_median_ci"]["level"], 1.0 - 2.0 / 32.0);  // 5 samples
  EXPECT_FALSE(j["runs"][1].contains("stopping"));
  const vecbench::ResultFile g = vecbench::load_result(dir.path / "r.json");
  EXPECT_EQ(json(g).dump(), json(f).dump());
  ASSERT_TRUE(g.meta.environment.has_value());
  EXPECT_TRUE(g.meta.environment->binary_git_dirty);
  EXPECT_TRUE(vecbench::is_noisy(g.runs[0]));
  EXPECT_TRUE(vecbench::is_noisy(g.runs[0], /*busy_only=*/true));
  EXPECT_NE(vecbench::status_text(g.runs[0]).find("ok (NOISY: other processes took 30.0 %"), std::string::npos);
}

// The same agreement for the optional multi-process keys (sample.ranks, written by MPI runs,
// shards and `vecbench merge --results`).
TEST(ResultIo, ReaderAgreesWithTheSchemaOnTheRanksKeys) {
  const json schema = read_json(fs::path(VECBENCH_SOURCE_DIR) / "schema" / "result.schema.json");
  json base = read_json(kGolden / "base.json");
  base["runs"][2]["samples"][0]["ranks"] = {{"count", 2},
                                            {"distribution", "dynamic"},
                                            {"scaling_efficiency", 0.93},
                                            {"per_rank",
                                             {{{"rank", 0},
                                               {"host", "n1"},
                                               {"images", 20},
                                               {"failed", 0},
                                               {"wall_s", 2.0},
                                               {"images_per_s", 10.0},
                                               {"setup_s", 1.0},
                                               {"chunks", 3}},
                                              {{"rank", 1}, {"images", 20}, {"wall_s", 2.5}, {"images_per_s", 8.0}}}}};
  ASSERT_EQ(parse_error(base), "");
  const vecbench::ResultFile f = vecbench::result_from_json(base);
  ASSERT_TRUE(f.runs[2].samples[0].ranks.has_value());
  EXPECT_EQ(f.runs[2].samples[0].ranks->per_rank[0].chunks, 3);
  EXPECT_EQ(f.runs[2].samples[0].ranks->per_rank[1].chunks, -1);
  EXPECT_FALSE(f.runs[1].samples[0].ranks.has_value());
  EXPECT_EQ(json(f)["runs"][2]["samples"][0]["ranks"]["scaling_efficiency"], 0.93);
  EXPECT_FALSE(json(f)["runs"][1]["samples"][0].contains("ranks"));  // absent stays absent
  EXPECT_NE(parse_error([&] {
              json c = base;
              c["runs"][2]["samples"][0]["ranks"]["per_rank"][0]["images"] = "many";
              return c;
            }())
                .find("runs[2].samples[0].ranks.per_rank[0].images"),
            std::string::npos);
  const std::vector<std::pair<std::string, std::string>> places = {
      {"/$defs/ranks", "/runs/2/samples/0/ranks"},
      {"/$defs/rank_sample", "/runs/2/samples/0/ranks/per_rank/0"},
  };
  ASSERT_TRUE(schema.at(json::json_pointer("/$defs/sample/properties")).contains("ranks"));
  expect_reader_agrees_with_schema(schema, base, places);
}

// The same agreement for the optional trace figures (sample.trace, issue #14).
TEST(ResultIo, ReaderAgreesWithTheSchemaOnTheTraceKeys) {
  const json schema = read_json(fs::path(VECBENCH_SOURCE_DIR) / "schema" / "result.schema.json");
  json base = read_json(kGolden / "base.json");
  base["runs"][2]["samples"][0]["trace"] = {
      {"wall_s", 2.0},
      {"forward_overlap", 1.9},
      {"spans", 400},
      {"file", "t.traces/run2.json"},
      {"devices", {{{"name", "cpu/2#0"}, {"busy", 0.9}, {"starved", 0.05}, {"blocked", 0.01}}}}};
  ASSERT_EQ(parse_error(base), "");
  const vecbench::ResultFile f = vecbench::result_from_json(base);
  ASSERT_TRUE(f.runs[2].samples[0].trace.has_value());
  EXPECT_DOUBLE_EQ(f.runs[2].samples[0].trace->forward_overlap, 1.9);
  EXPECT_EQ(f.runs[2].samples[0].trace->devices[0].name, "cpu/2#0");
  EXPECT_EQ(json(f)["runs"][2]["samples"][0]["trace"], base["runs"][2]["samples"][0]["trace"]);
  EXPECT_FALSE(json(f)["runs"][1]["samples"][0].contains("trace"));  // absent stays absent
  const std::vector<std::pair<std::string, std::string>> places = {
      {"/$defs/trace_figures", "/runs/2/samples/0/trace"},
      {"/$defs/trace_figures/properties/devices/items", "/runs/2/samples/0/trace/devices/0"},
  };
  ASSERT_TRUE(schema.at(json::json_pointer("/$defs/sample/properties")).contains("trace"));
  expect_reader_agrees_with_schema(schema, base, places);
}

TEST(ResultReader, EffectiveReplicaThreadsAsRecordedOrNothing) {
  RunResult r;
  EXPECT_TRUE(effective_replica_threads(r).empty());  // an external command records no devices
  r.effective.devices = {{"cpu/2#0", 3}, {"cpu/2#1", 2}};
  EXPECT_EQ(effective_replica_threads(r), (std::vector<int>{3, 2}));
  r.effective.devices = {{"cpu", -1}};  // threads not recorded: 0
  EXPECT_EQ(effective_replica_threads(r), (std::vector<int>{0}));
}

// A run's effective settings are typed: written and read back by the result file's writer and
// reader, a device without threads read as not recorded, a wrong type or an unknown key refused
// naming the key (no lookup by key anywhere else).
TEST(ResultReader, EffectiveSettingsRoundTripAndBadOnesNameTheKey) {
  vecbench::ResultFile f = vecbench::load_result(kGolden / "base.json");
  RunResult& r = f.runs[2];
  r.effective = vecbench::EffectiveSettings{};
  r.effective.devices = {{"cpu/2#0", 3}, {"cpu/2#1", -1}};
  r.effective.decode_threads = 4;
  r.effective.batch = 8;
  r.effective.batch_memory = "pinned";
  json j = f;
  EXPECT_FALSE(j["runs"][2]["effective"]["devices"][1].contains("threads"));  // not recorded: not written
  EXPECT_FALSE(j["runs"][2]["effective"].contains("prefetch_batches"));
  const RunResult back = vecbench::result_from_json(j, "e.json").runs[2];
  EXPECT_EQ(effective_replica_threads(back), (std::vector<int>{3, 0}));
  EXPECT_EQ(back.effective.decode_threads, 4);
  EXPECT_EQ(back.effective.batch, 8);
  EXPECT_EQ(back.effective.prefetch_batches, -1);
  EXPECT_EQ(back.effective.batch_memory, "pinned");
  json bad = j;
  bad["runs"][2]["effective"]["devices"] = "cpu";
  EXPECT_NE(parse_error(bad).find("runs[2].effective.devices"), std::string::npos) << parse_error(bad);
  bad = j;
  bad["runs"][2]["effective"]["threads"] = 2;
  EXPECT_NE(parse_error(bad).find("unknown key"), std::string::npos) << parse_error(bad);
}
