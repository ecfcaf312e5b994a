// Device specs: "cpu", "cpu/N", "cuda", "cuda:K", "cuda:K/N", comma-separated; expansion into
// virtual devices (one model replica each) and the split of CPU cores between them.
#pragma once
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "vecbench/core/error.hpp"

namespace vecbench {

/// What a device is: the host's cores or one CUDA GPU.
enum class DeviceKind { cpu, cuda };

/// One virtual device: one model replica, one worker thread (and one CUDA stream on a GPU).
struct VirtualDevice {
  DeviceKind kind = DeviceKind::cpu;
  int ordinal = -1;            ///< CUDA device index; -1 for the host
  int virtual_index = 0;       ///< index among the virtual devices made from one physical device
  int virtual_count = 1;       ///< how many virtual devices share that physical device
  int threads = 1;             ///< intra-op threads of this replica (CPU compute threads)
  double memory_cap_gb = 0.0;  ///< CUDA memory cap of this virtual device; 0 = none
  /// Name as shown in results: "cpu", "cpu/2#1", "cuda:0", "cuda:0/3#2".
  std::string name() const {
    std::string base = kind == DeviceKind::cpu ? "cpu" : "cuda:" + std::to_string(ordinal);
    if (virtual_count > 1) base += "/" + std::to_string(virtual_count) + "#" + std::to_string(virtual_index);
    return base;
  }
  /// The LibTorch device string ("cpu", "cuda:0").
  std::string torch_device() const { return kind == DeviceKind::cpu ? "cpu" : "cuda:" + std::to_string(ordinal); }
  bool is_cuda() const { return kind == DeviceKind::cuda; }
};

/// How to expand a spec.
struct DeviceOptions {
  int cpu_cores = 0;            ///< cores to split between CPU replicas; 0 = hardware_concurrency
  int threads_per_replica = 0;  ///< forces the intra-op threads of every replica; 0 = split cores
  int cuda_devices = 0;         ///< GPUs the machine has (from the backend)
  double memory_cap_gb = 0.0;   ///< per virtual CUDA device; 0 = none
};

/// True when every device is a CUDA device (and there is at least one).
inline bool all_cuda(const std::vector<VirtualDevice>& devs) {
  return !devs.empty() && std::all_of(devs.begin(), devs.end(), [](const VirtualDevice& d) { return d.is_cuda(); });
}

inline int hardware_cores() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

namespace detail {
inline int parse_count(const std::string& s, const std::string& spec) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
    throw ConfigError("devices", "bad number '" + s + "' in device spec '" + spec + "'");
  const int n = std::stoi(s);
  if (n < 1 || n > 256) throw ConfigError("devices", "count out of range in '" + spec + "'");
  return n;
}
}  // namespace detail

/// Expands a comma-separated device spec into virtual devices. CPU cores are split evenly
/// between all CPU replicas (the first ones get the remainder; at least one thread each).
inline std::vector<VirtualDevice> expand_devices(const std::string& spec, const DeviceOptions& opt = {}) {
  std::vector<VirtualDevice> out;
  std::string rest = spec;
  if (rest.empty()) throw ConfigError("devices", "empty device spec");
  std::size_t start = 0;
  while (start <= rest.size()) {
    const std::size_t comma = rest.find(',', start);
    std::string item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? rest.size() + 1 : comma + 1;
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    int count = 1;
    const auto slash = item.find('/');
    std::string dev = item.substr(0, slash);
    if (slash != std::string::npos) count = detail::parse_count(item.substr(slash + 1), spec);
    std::vector<int> ordinals;
    DeviceKind kind = DeviceKind::cpu;
    if (dev == "cpu") {
      ordinals = {-1};
    } else if (dev == "cuda" || dev.rfind("cuda:", 0) == 0) {
      kind = DeviceKind::cuda;
      if (dev == "cuda") {
        if (opt.cuda_devices == 0) throw ConfigError("devices", "'" + item + "': this machine has no CUDA device");
        for (int k = 0; k < opt.cuda_devices; ++k) ordinals.push_back(k);
      } else {
        const std::string idx = dev.substr(5);
        if (idx.empty() || idx.size() > 3 || idx.find_first_not_of("0123456789") != std::string::npos)
          throw ConfigError("devices", "bad CUDA index in '" + item + "'");
        const int k = std::stoi(idx);
        if (k >= opt.cuda_devices)
          throw ConfigError("devices", "'" + item + "': no such CUDA device (this machine has " +
                                           std::to_string(opt.cuda_devices) + ")");
        ordinals = {k};
      }
    } else {
      throw ConfigError("devices", "unknown device '" + item + "' (use cpu, cpu/N, cuda, cuda:K, cuda:K/N)");
    }
    for (int k : ordinals)
      for (int v = 0; v < count; ++v) {
        VirtualDevice d;
        d.kind = kind;
        d.ordinal = k;
        d.virtual_index = v;
        d.virtual_count = count;
        d.memory_cap_gb = kind == DeviceKind::cuda ? opt.memory_cap_gb : 0.0;
        out.push_back(d);
      }
  }
  // Split host cores between CPU replicas; GPU replicas get one host thread each.
  const int cores = opt.cpu_cores > 0 ? opt.cpu_cores : hardware_cores();
  const int n_cpu =
      static_cast<int>(std::count_if(out.begin(), out.end(), [](auto& d) { return d.kind == DeviceKind::cpu; }));
  int i = 0;
  for (auto& d : out) {
    if (opt.threads_per_replica > 0) {
      d.threads = opt.threads_per_replica;
    } else if (d.kind == DeviceKind::cpu) {
      d.threads = std::max(1, cores / n_cpu + (i < cores % n_cpu ? 1 : 0));
      ++i;
    } else {
      d.threads = 1;
    }
  }
  return out;
}

/// The spec's syntax alone (device names, CUDA indices of up to 3 digits, counts), not what this
/// machine has: an experiment file's devices are checked so when it is loaded, and the planner
/// expands each on the machine (expand_devices) before any run. ConfigError for a bad spec.
inline void check_device_spec(const std::string& spec) {
  DeviceOptions any;
  any.cuda_devices = 1000;  // every index the syntax allows
  any.cpu_cores = 1;
  expand_devices(spec, any);
}

}  // namespace vecbench
