// The closed sets of a run's outcome: how it ended (RunStatus) and whether its figures can be
// taken at face value (ValidityVerdict, with the NoiseCauses of a noisy one), with their names as
// result files write them (core/base/enum_names.hpp).
#pragma once
#include <array>
#include <optional>
#include <string>
#include <utility>

#include "vecbench/core/base/enum_names.hpp"

namespace vecbench {

/// How a run ended.
enum class RunStatus {
  ok,       ///< every repetition that started finished
  skipped,  ///< not run (budget, interrupt, a missing peer); `reason` says why
  error,    ///< a repetition threw; `reason` holds the error
  failed,   ///< ran, but its features are further from the reference than its tolerance
};

template <>
struct EnumNames<RunStatus> {
  static constexpr const char* what = "run status";
  static constexpr std::array<std::pair<RunStatus, const char*>, 4> names = {{{RunStatus::ok, "ok"},
                                                                              {RunStatus::skipped, "skipped"},
                                                                              {RunStatus::error, "error"},
                                                                              {RunStatus::failed, "failed"}}};
};

inline const char* to_string(RunStatus s) { return enum_name(s); }

/// The status named `s`, or nullopt when it is none of ok, skipped, error, failed.
inline std::optional<RunStatus> parse_run_status(const std::string& s) { return find_enum<RunStatus>(s); }

/// A run's validity verdict (experiment/validity.hpp).
enum class ValidityVerdict {
  valid,  ///< its figures can be taken at face value
  noisy,  ///< its repetitions disagree, or the machine was busy: compare says UNKNOWN
};
template <>
struct EnumNames<ValidityVerdict> {
  static constexpr const char* what = "validity verdict";
  static constexpr std::array<std::pair<ValidityVerdict, const char*>, 2> names = {
      {{ValidityVerdict::valid, "valid"}, {ValidityVerdict::noisy, "noisy"}}};
};
inline const char* to_string(ValidityVerdict v) { return enum_name(v); }

/// What made a run noisy (those over their thresholds, ValidityLimits).
enum class NoiseCause {
  spread,       ///< the repetitions disagree
  foreign_cpu,  ///< other processes took a share of the CPU
  steal,        ///< the hypervisor took a share (steal time)
};
template <>
struct EnumNames<NoiseCause> {
  static constexpr const char* what = "noise cause";
  static constexpr std::array<std::pair<NoiseCause, const char*>, 3> names = {
      {{NoiseCause::spread, "spread"}, {NoiseCause::foreign_cpu, "foreign_cpu"}, {NoiseCause::steal, "steal"}}};
};
inline const char* to_string(NoiseCause c) { return enum_name(c); }

}  // namespace vecbench
