// A run's settings to and from a result file's "params" (include/vecbench/results/result_params.hpp).
#include "vecbench/results/result_params.hpp"

#include <cmath>

namespace vecbench {

namespace {
/// A JSON float without a fraction (as JSON writers may give an integer), within the range a
/// double holds exactly, as that integer.
bool whole_float(const nlohmann::json& v, long long& out) {
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) >= 1e15) return false;
  return out = static_cast<long long>(d), true;
}

/// An integer setting: a JSON integer, or a float without a fraction.
bool integer_of(const nlohmann::json& v, long long& out) {
  if (v.is_number_integer()) return out = v.get<long long>(), true;
  return whole_float(v, out);
}
}  // namespace

std::string ResultParams::text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (long long n = 0; whole_float(v, n)) return std::to_string(n);
  return v.dump();
}

namespace {
/// A closed setting (resize, input) by its name: "" when taken, else what is wrong.
template <class E>
std::string read_enum(std::optional<E>& out, const nlohmann::json& value) {
  if (!value.is_string()) return "must be a string, not " + value.dump();
  const auto v = find_enum<E>(value.get<std::string>());
  if (!v) return "unknown " + std::string(EnumNames<E>::what) + " " + value.dump() + " (use " + enum_list<E>() + ")";
  return out = *v, "";
}
}  // namespace

std::string read_param(ResultParams& p, const std::string& key, const nlohmann::json& value) {
  if (key == "batch" || key == "threads") {
    long long n = 0;
    if (!integer_of(value, n)) return "must be an integer, not " + value.dump();
    (key == "batch" ? p.batch : p.threads) = n;
    return "";
  }
  if (key == "resize") return read_enum(p.resize, value);
  if (key == "input") return read_enum(p.input, value);
  std::string* text = key == "strategy" ? &p.strategy : key == "command" ? &p.command : nullptr;
  if (!text && key != "devices") {
    if (!value.is_string() && !value.is_number()) return "must be a string or number, not " + value.dump();
    p.other[key] = value;
    return "";
  }
  if (!value.is_string()) return "must be a string, not " + value.dump();
  if (!text) {  // devices
    try {
      p.devices = DevicesSpec::parse(value.get<std::string>());
    } catch (const ConfigError& e) {
      return "is not a devices spec: " + e.cause;
    }
    return "";
  }
  *text = value.get<std::string>();
  const std::string prefix = ResultParams::kExternalPrefix;
  if (text == &p.strategy && p.strategy.compare(0, prefix.size(), prefix) == 0) {
    p.external = p.strategy.substr(prefix.size());
    p.strategy.clear();
    if (p.external.empty()) return "names no command after '" + prefix + "'";
  }
  return "";
}

nlohmann::json params_to_json(const ResultParams& p) {
  nlohmann::json j = nlohmann::json::object();
  if (!p.strategy_label().empty()) j["strategy"] = p.strategy_label();
  if (p.devices) j["devices"] = p.devices->text();
  if (p.batch) j["batch"] = *p.batch;
  if (p.threads) j["threads"] = *p.threads;
  if (p.resize) j["resize"] = to_string(*p.resize);
  if (p.input) j["input"] = to_string(*p.input);
  if (!p.command.empty()) j["command"] = p.command;
  for (const auto& [k, v] : p.other) j[k] = v;
  return j;
}

}  // namespace vecbench
