// The result file's JSON writer and reader (declared in include/vecbench/results/result.hpp).
#include "vecbench/results/result.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <set>

namespace vecbench {

// ---- JSON writing -------------------------------------------------------------------------------
json summary_to_json(const stats::Summary& s) {
  return {{"median", s.median},
          {"min", s.min},
          {"max", s.max},
          {"rel_spread", s.rel_spread},
          {"count", s.count}};  // NaN is written as null
}
namespace detail {
/// A field's value; a closed set's (core/base/enum_names.hpp) by its name, as the reader takes it back.
template <class T>
void write_value(json& j, const T& v) {
  if constexpr (has_enum_names<T>::value) {
    j = enum_name(v);
  } else {
    j = v;
  }
}
template <class T>
void write_value(json& j, const std::vector<T>& v) {
  j = json::array();
  for (const T& x : v) write_value(j.emplace_back(), x);
}
template <class T>
void write_value(json& j, const std::optional<T>& v) {
  write_value(j, *v);
}
/// A record with a field table as a JSON object: every field its table writes.
template <class S>
json fields_to_json(const S& s) {
  json j = json::object();
  for_each_field(field_table(s), [&](const auto& f) {
    const auto& v = s.*(f.member);
    if (f.emit == Emit::always || is_set(v)) write_value(j[f.key], v);
  });
  return j;
}
}  // namespace detail

void to_json(json& j, const GpuInfo& g) { j = detail::fields_to_json(g); }
void to_json(json& j, const Meta& m) {
  j = m.extra.is_object() ? m.extra : json::object();
  j.update({{"argv", m.argv},
            {"vecbench_version", m.vecbench_version},
            {"git_sha", m.git_sha},
            {"git_dirty", m.git_dirty},
            {"date_utc", m.date_utc},
            {"host", m.host},
            {"cpu_model", m.cpu_model},
            {"cpu_cores", m.cpu_cores},
            {"gpus", m.gpus},
            {"versions", m.versions},
            {"model", m.model}});
  if (m.environment) j["environment"] = *m.environment;
}
void to_json(json& j, const Environment& e) { j = detail::fields_to_json(e); }
void to_json(json& j, const Validity& v) { j = detail::fields_to_json(v); }
void to_json(json& j, const DeviceSample& d) { j = detail::fields_to_json(d); }
void to_json(json& j, const RankSample& r) { j = detail::fields_to_json(r); }
void to_json(json& j, const RanksInfo& r) { j = detail::fields_to_json(r); }
void to_json(json& j, const DeviceShare& d) { j = detail::fields_to_json(d); }
void to_json(json& j, const TraceFigures& f) { j = detail::fields_to_json(f); }
void to_json(json& j, const Sample& s) { j = detail::fields_to_json(s); }
void to_json(json& j, const RunSummary& s) {
  j = {{"images_per_s", summary_to_json(s.images_per_s)}, {"wall_s", summary_to_json(s.wall_s)}};
  if (!s.latency_ms.empty()) {
    j["latency_ms"] = json::object();
    for (const auto& [k, v] : s.latency_ms) j["latency_ms"][k] = summary_to_json(v);
  }
  if (!s.stage_s_per_image.empty()) j["stage_s_per_image"] = s.stage_s_per_image;
  if (s.images_per_s_median_ci) j["images_per_s_median_ci"] = detail::fields_to_json(*s.images_per_s_median_ci);
}
void to_json(json& j, const Verification& v) { j = detail::fields_to_json(v); }
void to_json(json& j, const EffectiveDevice& d) { j = detail::fields_to_json(d); }
void to_json(json& j, const EffectiveSettings& e) { j = detail::fields_to_json(e); }
void to_json(json& j, const RunResult& r) {
  j = {{"id", r.id},          {"params", params_to_json(r.params)}, {"status", to_string(r.status)},
       {"reason", r.reason},  {"effective", r.effective},           {"samples", r.samples},
       {"summary", r.summary}};
  j["verification"] = r.verification ? json(*r.verification) : json(nullptr);
  if (r.validity) j["validity"] = *r.validity;
  if (r.stopping) j["stopping"] = detail::fields_to_json(*r.stopping);
}
void to_json(json& j, const ResultFile& f) {
  j = {{"schema_version", f.schema_version},
       {"name", f.name},
       {"meta", f.meta},
       {"config", {{"requested", f.config.requested}, {"effective", f.config.effective}}},
       {"runs", f.runs}};
}

// ---- JSON reading (every error names the file and the key) --------------------------------------
namespace detail {
/// Reads typed values out of JSON, throwing ResultFormatError(file, key path, cause).
struct ResultReader {
  std::string file;  ///< source named in errors
  [[noreturn]] void fail(const std::string& key, const std::string& cause) const {
    throw ResultFormatError(file, key, cause);
  }
  [[noreturn]] void expected(const std::string& p, const char* what, const json& v) const {
    fail(p, std::string("expected ") + what + ", got " + (v.is_number() ? v.dump() : v.type_name()));
  }
  static std::string at(const std::string& p, const std::string& k) { return p.empty() ? k : p + "." + k; }
  static std::string at(const std::string& p, std::size_t i) { return p + "[" + std::to_string(i) + "]"; }
  /// Checks `j` is an object; with `allowed` given, rejects keys not in it.
  void object(const json& j, const std::string& p, std::initializer_list<const char*> allowed = {}) const {
    if (!j.is_object()) expected(p, "an object", j);
    for (const auto& it : j.items())
      if (allowed.size() && std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return it.key() == a; }))
        fail(at(p, it.key()), "unknown key (not in result schema_version 1)");
  }
  const json& array(const json& j, const std::string& p) const {
    if (!j.is_array()) expected(p, "an array", j);
    return j;
  }
  void read(const json& v, const std::string& p, std::string& o) const {
    if (!v.is_string()) expected(p, "a string", v);
    o = v.get<std::string>();
  }
  void read(const json& v, const std::string& p, double& o) const {
    if (!v.is_number()) expected(p, "a number", v);
    o = v.get<double>();
  }
  void read(const json& v, const std::string& p, bool& o) const {
    if (!v.is_boolean()) expected(p, "a boolean", v);
    o = v.get<bool>();
  }
  void read(const json& v, const std::string& p, std::int64_t& o) const {
    if (!v.is_number() || (v.is_number_float() && v.get<double>() != std::floor(v.get<double>())))
      expected(p, "an integer", v);
    o = v.get<std::int64_t>();
  }
  /// A closed set's name (core/base/enum_names.hpp), refused naming the set's names otherwise.
  template <class E, std::enable_if_t<has_enum_names<E>::value, int> = 0>
  void read(const json& v, const std::string& p, E& o) const {
    std::string s;
    read(v, p, s);
    if (const auto e = find_enum<E>(s))
      o = *e;
    else
      fail(p, "'" + s + "' is not one of " + enum_list<E>());
  }
  template <class T>
  void read(const json& v, const std::string& p, std::map<std::string, T>& o) const {
    object(v, p);
    for (const auto& it : v.items()) read(it.value(), at(p, it.key()), o[it.key()]);
  }
  void read(const json& v, const std::string& p, std::pair<double, double>& o) const {
    if (!v.is_array() || v.size() != 2) expected(p, "a [t_s, depth] pair", v);
    read(v[0], p + "[0]", o.first);
    read(v[1], p + "[1]", o.second);
  }
  template <class T>
  void read(const json& v, const std::string& p, std::vector<T>& o) const {
    for (std::size_t i = 0; i < array(v, p).size(); ++i) read(v[i], at(p, i), o.emplace_back());
  }
  template <class T>
  void read(const json& v, const std::string& p, std::optional<T>& o) const {
    read(v, p, o.emplace());
  }
  /// A record with a field table: an object with only its table's keys, each read into its member.
  template <class S>
  void read_fields(const json& v, const std::string& p, S& o) const {
    if (!v.is_object()) expected(p, "an object", v);
    const auto table = field_table(o);
    for (const auto& it : v.items()) {
      bool known = false;
      for_each_field(table, [&](const auto& f) { known = known || it.key() == f.key; });
      if (!known) fail(at(p, it.key()), "unknown key (not in result schema_version 1)");
    }
    for_each_field(table, [&](const auto& f) { field(v, p, f.key, o.*(f.member), f.need == Need::required); });
  }
  /// Key `k` of object `j`; fails when missing.
  const json& sub(const json& j, const std::string& p, const char* k) const {
    if (!j.contains(k)) fail(at(p, k), "missing");
    return j[k];
  }
  /// Reads key `k` of object `j` into `o`; a missing key fails when `required`, else keeps `o`.
  template <class T>
  void field(const json& j, const std::string& p, const char* k, T& o, bool required = true) const {
    const auto it = j.find(k);
    if (it != j.end())
      read(*it, at(p, k), o);
    else if (required)
      fail(at(p, k), "missing");
  }
  /// field() for each ("key", member) pair; `req` says whether they are required.
  void fields(bool, const json&, const std::string&) const {}
  template <class T, class... Rest>
  void fields(bool req, const json& j, const std::string& p, const char* k, T& o, Rest&&... rest) const {
    field(j, p, k, o, req);
    fields(req, j, p, std::forward<Rest>(rest)...);
  }
  void read(const json& v, const std::string& p, stats::Summary& o) const {
    object(v, p, {"median", "min", "max", "rel_spread", "count"});
    using Key = std::pair<const char*, double*>;
    for (auto [k, d] :
         {Key{"median", &o.median}, Key{"min", &o.min}, Key{"max", &o.max}, Key{"rel_spread", &o.rel_spread}}) {
      if (v.contains(k) && v[k].is_null())
        *d = std::nan("");  // NaN is stored as null
      else
        field(v, p, k, *d);
    }
    std::int64_t c = 0;
    field(v, p, "count", c);
    if (c < 0) fail(at(p, "count"), "must be >= 0");
    o.count = static_cast<std::size_t>(c);
  }
  void read(const json& v, const std::string& p, GpuInfo& o) const { read_fields(v, p, o); }
  void read(const json& v, const std::string& p, DeviceSample& o) const { read_fields(v, p, o); }
  void read(const json& v, const std::string& p, RankSample& o) const { read_fields(v, p, o); }
  void read(const json& v, const std::string& p, RanksInfo& o) const { read_fields(v, p, o); }
  void read(const json& v, const std::string& p, DeviceShare& o) const { read_fields(v, p, o); }
  void read(const json& v, const std::string& p, TraceFigures& o) const { read_fields(v, p, o); }
  void read(const json& v, const std::string& p, Sample& o) const { read_fields(v, p, o); }
  void read(const json& v, const std::string& p, EffectiveDevice& o) const { read_fields(v, p, o); }
  void read(const json& v, const std::string& p, EffectiveSettings& o) const { read_fields(v, p, o); }
  void read(const json& v, const std::string& p, RunSummary& o) const {
    object(v, p, {"images_per_s", "wall_s", "latency_ms", "stage_s_per_image", "images_per_s_median_ci"});
    fields(true, v, p, "images_per_s", o.images_per_s, "wall_s", o.wall_s);
    fields(false, v, p, "latency_ms", o.latency_ms, "stage_s_per_image", o.stage_s_per_image);
    if (v.contains("images_per_s_median_ci") && !v["images_per_s_median_ci"].is_null())
      read_fields(v["images_per_s_median_ci"], at(p, "images_per_s_median_ci"), o.images_per_s_median_ci.emplace());
  }
  void read(const json& v, const std::string& p, Verification& o) const { read_fields(v, p, o); }
  void read(const json& v, const std::string& p, RunResult& o) const {
    object(v, p,
           {"id", "params", "status", "reason", "effective", "samples", "summary", "verification", "validity",
            "stopping"});
    field(v, p, "id", o.id);
    if (o.id.empty()) fail(at(p, "id"), "must not be empty");
    const json params = sub(v, p, "params");
    object(params, at(p, "params"));
    o.params = ResultParams();
    for (const auto& it : params.items())
      if (const std::string why = read_param(o.params, it.key(), it.value()); !why.empty())
        fail(at(at(p, "params"), it.key()), why);
    std::string st;
    field(v, p, "status", st);
    if (const auto parsed = parse_run_status(st))
      o.status = *parsed;
    else
      fail(at(p, "status"), "'" + st + "' is not one of ok, skipped, error, failed");
    field(v, p, "reason", o.reason, false);
    if (o.status != RunStatus::ok && o.reason.empty()) fail(at(p, "reason"), "must say why the run is " + st);
    field(v, p, "effective", o.effective, false);
    field(v, p, "samples", o.samples);
    field(v, p, "summary", o.summary);
    if (v.contains("verification") && !v["verification"].is_null())
      field(v, p, "verification", o.verification.emplace());
    if (v.contains("validity") && !v["validity"].is_null())
      read_fields(v["validity"], at(p, "validity"), o.validity.emplace());
    if (v.contains("stopping") && !v["stopping"].is_null())
      read_fields(v["stopping"], at(p, "stopping"), o.stopping.emplace());
  }
  void read(const json& v, const std::string& p, Meta& o) const {
    object(v, p);
    o.extra = v;
    for (const char* k : {"argv", "vecbench_version", "git_sha", "git_dirty", "date_utc", "host", "cpu_model",
                          "cpu_cores", "gpus", "versions", "model", "environment"})
      o.extra.erase(k);
    if (v.contains("environment") && !v["environment"].is_null())
      read_fields(v["environment"], at(p, "environment"), o.environment.emplace());
    fields(true, v, p, "vecbench_version", o.vecbench_version, "git_sha", o.git_sha, "date_utc", o.date_utc, "host",
           o.host, "cpu_model", o.cpu_model, "cpu_cores", o.cpu_cores);
    fields(false, v, p, "argv", o.argv, "gpus", o.gpus);
    if (v.contains("git_dirty") && !v["git_dirty"].is_null()) field(v, p, "git_dirty", o.git_dirty);  // null: unknown
    if (v.contains("versions")) object(o.versions = v["versions"], at(p, "versions"));
    for (const auto& it : o.versions.items())
      if (!it.value().is_string() && !it.value().is_null())
        expected(at(at(p, "versions"), it.key()), "a string or null", it.value());
    if (v.contains("model") && !v["model"].is_null()) object(o.model = v["model"], at(p, "model"));
  }
};
}  // namespace detail

/// Parses a result file's JSON; `source` (a file name) is named in errors. Rejects other
/// schema versions, unknown keys (outside the free-form objects) and duplicate run ids.
ResultFile result_from_json(const json& j, const std::string& source) {
  const detail::ResultReader r{source};
  r.object(j, "", {"schema_version", "name", "meta", "config", "runs"});
  if (!j.contains("schema_version")) r.fail("schema_version", "missing: not a vecbench result file");
  const json& v = j["schema_version"];
  if (!v.is_number_integer() || v.get<std::int64_t>() != kResultSchemaVersion)
    r.fail("schema_version", v.dump() + " is not supported: this vecbench reads schema_version " +
                                 std::to_string(kResultSchemaVersion) + " only");
  ResultFile f;
  r.field(j, "", "name", f.name);
  r.field(j, "", "meta", f.meta);
  const json& c = r.sub(j, "", "config");
  r.object(c, "config", {"requested", "effective"});
  r.object(f.config.requested = r.sub(c, "config", "requested"), "config.requested");
  r.object(f.config.effective = r.sub(c, "config", "effective"), "config.effective");
  r.field(j, "", "runs", f.runs);
  std::set<std::string> ids;
  for (std::size_t i = 0; i < f.runs.size(); ++i)
    if (!ids.insert(f.runs[i].id).second) r.fail(r.at("runs", i) + ".id", "duplicate run id '" + f.runs[i].id + "'");
  return f;
}

void from_json(const json& j, ResultFile& f) { f = result_from_json(j); }

/// Result metadata from its JSON (base_meta and what the caller added); ResultFormatError.
Meta meta_from_json(const json& j, const std::string& source) {
  Meta m;
  detail::ResultReader{source}.read(j, "meta", m);
  return m;
}

/// One sample from its JSON (for example a rank's message); ResultFormatError naming `source`.
Sample sample_from_json(const json& j, const std::string& source) {
  Sample s;
  detail::ResultReader{source}.read(j, "sample", s);
  return s;
}

/// One verification record from its JSON; ResultFormatError naming `source`.
Verification verification_from_json(const json& j, const std::string& source) {
  Verification v;
  detail::ResultReader{source}.read(j, "verification", v);
  return v;
}

/// Reads and parses a result file; IoError when unreadable, ResultFormatError when malformed.
ResultFile load_result(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw IoError(path.string(), "cannot open result file");
  const json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ResultFormatError(path.string(), "", "not valid JSON");
  return result_from_json(j, path.string());
}

/// Writes `f` as indented JSON, atomically (temp file in the same directory, then rename).
void save_result(const std::filesystem::path& path, const ResultFile& f) { atomic_write(path, json(f).dump(2) + "\n"); }

std::vector<int> effective_replica_threads(const RunResult& r) {
  std::vector<int> out;
  for (const auto& d : r.effective.devices) out.push_back(d.threads > 0 ? static_cast<int>(d.threads) : 0);
  return out;
}

}  // namespace vecbench
