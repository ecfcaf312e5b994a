// A run's settings as its result file records them (the run's "params"), typed: what the readers
// of results (tables, report, compare, the sequential baseline, tune) take. Only the result file's
// reader and writer (src/results/result.cpp) turn them into JSON and back (read_param,
// params_to_json).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/base/input_settings.hpp"
#include "vecbench/core/base/strategy_name.hpp"
#include "vecbench/core/run/device.hpp"

namespace vecbench {

/// The settings of one run of a result file.
struct ResultParams {
  /// A matrix run's strategy: the registry's name ("sequential", "data-parallel", ...); empty for
  /// a peer command.
  std::string strategy;
  /// A peer command's name (the file records its strategy as "external:NAME"); empty otherwise.
  std::string external;
  std::string command;  ///< a peer command's command line; empty otherwise
  /// The devices spec, parsed (its text() as the experiment file wrote it); nullopt: not recorded.
  std::optional<DevicesSpec> devices;
  std::optional<long long> batch;    ///< images per forward
  std::optional<long long> threads;  ///< intra-op threads per replica (0: the cores split)
  std::optional<ResizeMode> resize;  ///< nullopt: not recorded
  std::optional<SourceKind> input;   ///< the kind of input; nullopt: not recorded
  /// Keys this build does not know (a newer or hand-made file), as the file has them (a string or
  /// a number): kept, compared and written back as they are.
  std::map<std::string, nlohmann::json> other;

  bool is_external() const { return !external.empty(); }
  /// Whether the run is the strategy all speedups are measured against.
  bool is_sequential() const { return strategy == kSequentialStrategy; }
  /// The strategy as tables and files show it: its name, or "external:NAME" for a peer command.
  std::string strategy_label() const { return is_external() ? kExternalPrefix + external : strategy; }

  /// Every recorded setting with its value as text (numbers in decimal), in a fixed order: the
  /// known keys (strategy, devices, batch, threads, resize, input, command), then the others by
  /// name. What compare's filters and distances and the run ids are made of.
  std::vector<std::pair<std::string, std::string>> entries() const {
    std::vector<std::pair<std::string, std::string>> e;
    const auto add = [&](const char* k, const std::string& v) {
      if (!v.empty()) e.emplace_back(k, v);
    };
    add("strategy", strategy_label());
    if (devices) add("devices", devices->text());
    if (batch) e.emplace_back("batch", std::to_string(*batch));
    if (threads) e.emplace_back("threads", std::to_string(*threads));
    if (resize) add("resize", to_string(*resize));
    if (input) add("input", to_string(*input));
    add("command", command);
    for (const auto& [k, v] : other) e.emplace_back(k, text(v));
    return e;
  }
  /// The value of setting `key` as entries() writes it; nullopt when not recorded.
  std::optional<std::string> find(const std::string& key) const {
    for (auto& [k, v] : entries())
      if (k == key) return v;
    return std::nullopt;
  }
  /// The value of setting `key` as text; "" when not recorded.
  std::string text_of(const std::string& key) const { return find(key).value_or(""); }

  /// How a result file writes a peer command's strategy: this prefix and its name.
  static constexpr const char* kExternalPrefix = "external:";

  /// A JSON string or number as text: strings as they are, integral numbers without ".0".
  static std::string text(const nlohmann::json& v);
};

/// Sets setting `key` of `p` from its value in a result file; ConfigError-free: returns what is
/// wrong with the value ("" when taken): the result reader names the field.
std::string read_param(ResultParams& p, const std::string& key, const nlohmann::json& value);
/// The settings as a result file's "params" object.
nlohmann::json params_to_json(const ResultParams& p);

/// The virtual devices a run had on a machine with `gpus` GPUs (DevicesSpec::virtual_count:
/// "cpu/3" -> 3, "cuda:0/3" -> 3, "cuda" -> `gpus`); 0 when its devices are not recorded.
inline int device_count(const ResultParams& p, int gpus) { return p.devices ? p.devices->virtual_count(gpus) : 0; }

}  // namespace vecbench
