// The experiment runner's result file from its finished plan (see result_assembly.hpp).
#include "result_assembly.hpp"

#include <map>
#include <set>
#include <string>

#include "vecbench/core/system/host.hpp"
#include "vecbench/engine/int8_calibration.hpp"
#include "vecbench/experiment/validity.hpp"
#include "vecbench/experiment/verify.hpp"

namespace vecbench {

namespace {

/// config.effective: what the runner resolved (model resize, cores, device expansions, ranks).
nlohmann::json effective_config(const Experiment& e, const ExperimentEnv& env, const Distribution* dist) {
  nlohmann::json eff = {{"model_resize", to_string(env.model_resize)},
                        {"input_size", env.input_size},
                        {"cores", hardware_cores()},
                        {"cuda_devices", env.cuda_devices}};
  if (e.model.precision == Precision::int8 && !e.model.calibration.empty()) try {
      const Int8Calibration c = load_int8_calibration(e.model.calibration);  // what the runs' scales came from
      eff["int8_calibration"] = {{"path", c.path},
                                 {"sha256", c.sha256},
                                 {"model_sha256", c.model_sha256},
                                 {"images", c.images},
                                 {"images_sha256", c.images_sha256},
                                 {"method", to_string(c.method)}};
    } catch (const std::exception& ex) {
      eff["int8_calibration"] = ex.what();
    }
  nlohmann::json expansions = nlohmann::json::object();
  std::map<std::string, DevicesSpec> specs;  // by the text the experiment file wrote
  for (const auto& mx : e.matrices)
    for (const DevicesSpec& d : mx.devices) specs.emplace(d.text(), d);
  for (const auto& [text, d] : specs) {
    try {
      DeviceOptions o;
      o.cuda_devices = env.cuda_devices;
      nlohmann::json list = nlohmann::json::array();
      for (const auto& v : d.expand(o)) list.push_back({{"name", v.name()}, {"threads", v.threads}});
      expansions[text] = list;
    } catch (const std::exception& ex) {
      expansions[text] = ex.what();
    }
  }
  eff["device_expansion"] = expansions;
  if (dist) eff["distribution"] = dist->describe();
#ifdef VECBENCH_INJECT_SLOWDOWN
  eff["injected_slowdown"] = VECBENCH_INJECT_SLOWDOWN;  // a build slowed on purpose (CMakeLists.txt)
#endif
  return eff;
}

}  // namespace

ResultFile assemble(const Experiment& e, const ExperimentEnv& env, const Distribution* dist,
                    std::vector<PlannedRun>& runs) {
  ResultFile f;
  f.name = e.name;
  f.meta = env.meta;
  f.config.requested = e.raw;
  f.config.effective = effective_config(e, env, dist);
  const double tolerance = rel_tolerance(e.model.engine, e.model.precision);
  for (auto& p : runs) {
    RunResult& r = p.result;
    if (r.status == RunStatus::ok && r.samples.empty()) {
      r.status = RunStatus::skipped;
      r.reason = "no repetition ran";
    }
    summarize_run(r);
    if (!p.external) judge_verification(r, tolerance);
    r.validity = judge_validity(r);
    f.runs.push_back(std::move(r));
  }
  return f;
}

}  // namespace vecbench
