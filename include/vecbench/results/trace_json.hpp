// A run's trace (core/run/trace.hpp) as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev)
// and chrome://tracing open directly: {"traceEvents": [...]} with one "X" (complete) event per
// span (ts and dur in microseconds from the trace's first event, args batch and images), one
// tid per thread named by "thread_name" metadata, one pid per process (an MPI rank's pid is its
// rank) named by "process_name", and vecbench's own figures under "otherData.vecbench" (device
// names, which lane is which device, the timed window). The reader turns such a file back into
// Traces, one per pid, for `vecbench trace summarize`.
#pragma once
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/run/trace.hpp"
#include "vecbench/core/run/trace_figures.hpp"
#include "vecbench/results/markdown_table.hpp"

namespace vecbench {

namespace detail {
/// The earliest time in `t` (span starts and window start), ns: the file's time 0.
inline std::int64_t trace_origin_ns(const Trace& t) {
  std::int64_t o = t.run_begin_ns() > 0 ? t.run_begin_ns() : INT64_MAX;
  for (const auto& l : t.lanes())
    for (const auto& s : l.spans) o = std::min(o, s.start_ns);
  return o == INT64_MAX ? 0 : o;
}
inline void append_us(std::string& out, std::int64_t ns) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03d", ns / 1000, static_cast<int>(ns % 1000));
  out += buf;
}
}  // namespace detail

/// `t` as Chrome trace-event JSON text (the events of one pid, t.pid()).
inline std::string trace_to_chrome_json(const Trace& t) {
  using nlohmann::json;
  const std::int64_t origin = detail::trace_origin_ns(t);
  const std::string pid = std::to_string(t.pid());
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  out += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + pid +
         ",\"tid\":0,\"args\":{\"name\":" + json(t.process()).dump() + "}}";
  json lanes = json::array();
  int tid = 0;
  for (const auto& l : t.lanes()) {
    ++tid;
    const std::string tids = std::to_string(tid);
    out += ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + pid + ",\"tid\":" + tids +
           ",\"args\":{\"name\":" + json(l.name).dump() + "}}";
    out += ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" + pid + ",\"tid\":" + tids +
           ",\"args\":{\"sort_index\":" + tids + "}}";
    lanes.push_back({{"tid", tid}, {"name", l.name}, {"device", l.device}});
    for (const auto& s : l.spans) {
      out += ",\n{\"ph\":\"X\",\"name\":\"";
      out += span_kind_name(s.kind);
      out += "\",\"pid\":" + pid + ",\"tid\":" + tids + ",\"ts\":";
      detail::append_us(out, s.start_ns - origin);
      out += ",\"dur\":";
      detail::append_us(out, s.dur_ns);
      out += ",\"args\":{\"batch\":" + std::to_string(s.batch) + ",\"images\":" + std::to_string(s.images) + "}}";
    }
  }
  const json other = {{"vecbench",
                       {{"pid", t.pid()},
                        {"devices", t.devices()},
                        {"lanes", lanes},
                        {"run_begin_us", static_cast<double>(t.run_begin_ns() - origin) * 1e-3},
                        {"run_end_us", static_cast<double>(t.run_end_ns() - origin) * 1e-3}}}};
  out += "\n],\"otherData\":" + other.dump() + "}\n";
  return out;
}

/// Writes `t` to `path` (atomically; parent folders made).
inline void save_trace(const std::filesystem::path& path, const Trace& t) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  atomic_write(path, trace_to_chrome_json(t));
}

namespace detail {
inline double num(const nlohmann::json& e, const char* key, const std::string& where) {
  const auto it = e.find(key);
  if (it == e.end() || !it->is_number()) throw Error(where + ": event without a numeric '" + key + "'");
  return it->get<double>();
}
inline std::int64_t us_to_ns(double us) { return static_cast<std::int64_t>(us * 1000.0 + (us >= 0 ? 0.5 : -0.5)); }
/// Lanes of pid `pid` from the metadata: tid -> (name, device).
inline void read_lane_meta(const nlohmann::json& doc, int pid, std::map<int, std::pair<std::string, int>>& lanes,
                           Trace& t) {
  const auto& vb = doc.contains("otherData") ? doc["otherData"].value("vecbench", nlohmann::json::object())
                                             : nlohmann::json::object();
  if (vb.value("pid", -1) != pid) return;
  if (vb.contains("devices")) t.set_devices(vb["devices"].get<std::vector<std::string>>());
  for (const auto& l : vb.value("lanes", nlohmann::json::array()))
    lanes[l.value("tid", 0)] = {l.value("name", std::string()), l.value("device", -1)};
  if (vb.contains("run_begin_us") && vb.contains("run_end_us"))
    t.add_window(us_to_ns(vb["run_begin_us"].get<double>()), us_to_ns(vb["run_end_us"].get<double>()));
}
}  // namespace detail

/// The traces of a Chrome trace-event file written by save_trace (one per pid; a file of several
/// ranks' events concatenated has several). Spans of unknown names are skipped; an "X" event
/// without ts or dur is an error. `where` names the source in errors.
inline std::vector<std::unique_ptr<Trace>> traces_from_chrome_json(const nlohmann::json& doc,
                                                                   const std::string& where) {
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    throw Error(where + ": not a trace-event file (no traceEvents array)");
  std::map<int, std::map<int, std::string>> names;  // pid -> tid -> thread_name
  std::map<int, std::string> processes;
  for (const auto& e : doc["traceEvents"])
    if (e.value("ph", "") == "M" && e.contains("args")) {
      const int pid = e.value("pid", 0);
      if (e.value("name", "") == "thread_name") names[pid][e.value("tid", 0)] = e["args"].value("name", "");
      if (e.value("name", "") == "process_name") processes[pid] = e["args"].value("name", "");
    }
  std::map<int, std::unique_ptr<Trace>> by_pid;
  std::map<int, std::map<int, std::pair<std::string, int>>> lane_meta;
  auto trace_of = [&](int pid) -> Trace& {
    auto& t = by_pid[pid];
    if (!t) {
      t = std::make_unique<Trace>(pid, processes.count(pid) ? processes[pid] : "pid " + std::to_string(pid));
      detail::read_lane_meta(doc, pid, lane_meta[pid], *t);
    }
    return *t;
  };
  for (const auto& e : doc["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const int pid = e.value("pid", 0), tid = e.value("tid", 0);
    Trace& t = trace_of(pid);
    const std::optional<SpanKind> kind = find_enum<SpanKind>(e.value("name", ""));
    if (!kind) continue;
    const SpanKind k = *kind;
    const auto meta = lane_meta[pid].find(tid);
    const std::string lane_name = meta != lane_meta[pid].end() ? meta->second.first
                                  : names[pid].count(tid)      ? names[pid][tid]
                                                               : "tid " + std::to_string(tid);
    TraceLane* lane = t.lane(lane_name, meta != lane_meta[pid].end() ? meta->second.second : -1);
    Span s;
    s.start_ns = detail::us_to_ns(detail::num(e, "ts", where));
    s.dur_ns = detail::us_to_ns(detail::num(e, "dur", where));
    s.kind = k;
    if (e.contains("args")) {
      s.batch = e["args"].value("batch", std::int64_t{-1});
      s.images = e["args"].value("images", 0);
    }
    lane->spans.push_back(s);
  }
  std::vector<std::unique_ptr<Trace>> out;
  for (auto& [pid, t] : by_pid) out.push_back(std::move(t));
  return out;
}

/// The traces of trace file `path` (see traces_from_chrome_json).
inline std::vector<std::unique_ptr<Trace>> load_traces(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw IoError(path.string(), "cannot read trace file");
  nlohmann::json doc;
  try {
    in >> doc;
  } catch (const std::exception& e) {
    throw Error(path.string() + ": not JSON: " + e.what());
  }
  return traces_from_chrome_json(doc, path.string());
}

/// The busy / starved / blocked table of `f` (markdown), with the forward overlap.
inline std::string trace_figures_markdown(const TraceFigures& f) {
  std::ostringstream o;
  char buf[160];
  std::snprintf(buf, sizeof buf, "timed window %.3f s, %lld spans, forward overlap %.2f device-equivalents\n\n",
                f.wall_s, static_cast<long long>(f.spans), f.forward_overlap);
  o << buf;
  MarkdownTable table({{"device"},
                       {"busy", Align::right},
                       {"starved", Align::right},
                       {"blocked", Align::right},
                       {"other", Align::right}});
  auto pct = [&buf](double x) {
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
    return std::string(buf);
  };
  for (const auto& d : f.devices)
    table.row(
        {d.name, pct(d.busy), pct(d.starved), pct(d.blocked), pct(std::max(0.0, 1 - d.busy - d.starved - d.blocked))});
  o << table.str();
  return o.str();
}

}  // namespace vecbench
