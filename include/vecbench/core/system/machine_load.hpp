// The machine's state around a measurement (Linux /proc; elsewhere "unknown"): the load average,
// and over one timed repetition the CPU time that other processes took and the time the
// hypervisor stole, as shares of the machine's capacity (all its cores). A result records them
// (results/result_types.hpp: Environment, Sample) so that a number measured while something else
// shared the cores says so (experiment/validity.hpp turns them into a verdict).
#pragma once
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace vecbench {

/// The machine's CPU time so far, in clock ticks summed over every core (/proc/stat "cpu").
struct CpuTimes {
  std::uint64_t total = 0;  ///< every state, idle included (user .. steal; guest time is in user)
  std::uint64_t idle = 0;   ///< idle + iowait
  std::uint64_t steal = 0;  ///< taken by the hypervisor for other guests
};

/// /proc/stat's first line; nullopt where it cannot be read.
inline std::optional<CpuTimes> read_cpu_times(const std::string& path = "/proc/stat") {
  std::ifstream f(path);
  std::string label;
  std::uint64_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (!(f >> label) || label != "cpu") return std::nullopt;
  for (auto& x : v)
    if (!(f >> x)) return std::nullopt;  // user nice system idle iowait irq softirq steal
  CpuTimes t;
  for (auto x : v) t.total += x;
  t.idle = v[3] + v[4];
  t.steal = v[7];
  return t;
}

/// CPU seconds this process has used so far (every thread, user + system), and its children
/// that it has waited for (a peer command run by the experiment is the experiment's own work).
inline double own_cpu_seconds() {
  double s = 0.0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    if (::getrusage(who, &u) != 0) continue;
    s += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  }
  return s;
}

/// What the rest of the machine did during an interval, as shares of its capacity (0..1).
struct LoadShares {
  double foreign_cpu = 0.0;  ///< CPU time of other processes / (wall time x cores)
  double steal = 0.0;        ///< stolen time / (wall time x cores)
};

/// Busy ticks of the machine minus this process's own CPU time, and steal, between two readings.
/// `ticks_per_s`: the kernel's USER_HZ. Negative differences (rounding) count as 0.
inline LoadShares load_shares(const CpuTimes& a, const CpuTimes& b, double own_cpu_s, double ticks_per_s) {
  LoadShares s;
  if (b.total <= a.total || ticks_per_s <= 0) return s;
  const double total = static_cast<double>(b.total - a.total);
  const double busy = total - static_cast<double>(b.idle - a.idle) - static_cast<double>(b.steal - a.steal);
  s.foreign_cpu = std::clamp((busy - own_cpu_s * ticks_per_s) / total, 0.0, 1.0);
  s.steal = std::clamp(static_cast<double>(b.steal - a.steal) / total, 0.0, 1.0);
  return s;
}

/// Measures LoadShares over its lifetime's interval: start() ... stop().
class LoadProbe {
 public:
  void start() {
    t0_ = read_cpu_times();
    own0_ = own_cpu_seconds();
  }
  /// nullopt where /proc/stat cannot be read (not Linux).
  std::optional<LoadShares> stop() const {
    const auto t1 = read_cpu_times();
    if (!t0_ || !t1) return std::nullopt;
    return load_shares(*t0_, *t1, own_cpu_seconds() - own0_, static_cast<double>(::sysconf(_SC_CLK_TCK)));
  }

 private:
  std::optional<CpuTimes> t0_;
  double own0_ = 0.0;
};

/// The 1, 5 and 15 minute load averages (/proc/loadavg); empty where they cannot be read.
inline std::vector<double> load_average(const std::string& path = "/proc/loadavg") {
  std::ifstream f(path);
  std::vector<double> v(3);
  for (auto& x : v)
    if (!(f >> x)) return {};
  return v;
}

/// The value of the first /proc/cpuinfo line whose key is `key` ("model name", "flags"), blanks
/// around it cut; nullopt where there is none. The one reader of that file: the result's CPU, the
/// tune profile's machine key and the ISA list agree.
inline std::optional<std::string> cpuinfo_value(const std::string& key, const std::string& path = "/proc/cpuinfo") {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string k = line.substr(0, colon);
    k.erase(k.find_last_not_of(" \t") + 1);
    if (k != key) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return std::nullopt;
}

/// The CPU's model name (/proc/cpuinfo "model name"; "unknown" if none).
inline std::string cpu_model(const std::string& path = "/proc/cpuinfo") {
  const auto v = cpuinfo_value("model name", path);
  return v && !v->empty() ? *v : "unknown";
}

/// The vector ISA extensions of this CPU that decide which kernels run (from /proc/cpuinfo's
/// flags, in this order): avx2, fma, avx512f, avx512_bf16, avx512_vnni, avx512_fp16, avx_vnni,
/// amx_tile, amx_bf16, amx_int8. Empty where unknown.
inline std::vector<std::string> cpu_isa(const std::string& path = "/proc/cpuinfo") {
  const auto flags = cpuinfo_value("flags", path);
  if (!flags) return {};
  std::istringstream in(*flags);
  std::vector<std::string> have;
  for (std::string w; in >> w;) have.push_back(w);
  std::vector<std::string> out;
  for (const char* k : {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx512_fp16", "avx_vnni", "amx_tile",
                        "amx_bf16", "amx_int8"})
    if (std::find(have.begin(), have.end(), k) != have.end()) out.emplace_back(k);
  return out;
}

}  // namespace vecbench
