// Result files (schema_version 1) as JSON: the writer (to_json) and the reader (every error
// names the file and the key) of the result model in results/result_types.hpp. The format is
// described by schema/result.schema.json; keep the two in sync. Declared here, compiled once in
// src/results/result.cpp (library vecbench_results): the reader and writer instantiate much of
// nlohmann::json, which cost every translation unit that included them seconds to compile.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/results/result_types.hpp"

namespace vecbench {

// ---- JSON writing -------------------------------------------------------------------------------
json summary_to_json(const stats::Summary& s);
void to_json(json& j, const GpuInfo& g);
void to_json(json& j, const Meta& m);
void to_json(json& j, const Environment& e);
void to_json(json& j, const Validity& v);
void to_json(json& j, const DeviceSample& d);
void to_json(json& j, const RankSample& r);
void to_json(json& j, const RanksInfo& r);
void to_json(json& j, const DeviceShare& d);
void to_json(json& j, const TraceFigures& f);
void to_json(json& j, const Sample& s);
void to_json(json& j, const RunSummary& s);
void to_json(json& j, const Verification& v);
void to_json(json& j, const EffectiveDevice& d);
void to_json(json& j, const EffectiveSettings& e);
void to_json(json& j, const RunResult& r);
void to_json(json& j, const ResultFile& f);

namespace detail {
/// printf-formats `v` with `f`, or "n/a" when it is not finite (for tables of results).
inline std::string format_number(const char* f, double v) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
}  // namespace detail

// ---- JSON reading (every error names the file and the key) --------------------------------------
/// Parses a result file's JSON; `source` (a file name) is named in errors. Rejects other
/// schema versions, unknown keys (outside the free-form objects) and duplicate run ids.
ResultFile result_from_json(const json& j, const std::string& source = "<json>");

void from_json(const json& j, ResultFile& f);

/// Result metadata from its JSON (base_meta and what the caller added); ResultFormatError.
Meta meta_from_json(const json& j, const std::string& source = "<json>");

/// One sample from its JSON (for example a rank's message); ResultFormatError naming `source`.
Sample sample_from_json(const json& j, const std::string& source = "<json>");

/// One verification record from its JSON; ResultFormatError naming `source`.
Verification verification_from_json(const json& j, const std::string& source = "<json>");

/// The threads of each replica a run had, in order, as its effective settings record them
/// (`effective.devices[].threads`, written by the experiment runner; 0 for a device without
/// them); empty when not recorded (an external command, an older file).
std::vector<int> effective_replica_threads(const RunResult& r);

/// Reads and parses a result file; IoError when unreadable, ResultFormatError when malformed.
ResultFile load_result(const std::filesystem::path& path);

/// Writes `f` as indented JSON, atomically (temp file in the same directory, then rename).
void save_result(const std::filesystem::path& path, const ResultFile& f);

}  // namespace vecbench
