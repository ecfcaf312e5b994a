// Device specs: "cpu", "cpu/N", "cuda", "cuda:K", "cuda:K/N", comma-separated; expansion into
// virtual devices (one model replica each) and the split of CPU cores between them.
#pragma once
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "vecbench/core/base/error.hpp"

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

/// One part of a devices spec: the host ("cpu"), one GPU ("cuda:K") or every GPU of the machine
/// ("cuda"), split into `count` virtual devices ("/N").
struct DeviceEntry {
  DeviceKind kind = DeviceKind::cpu;
  int ordinal = -1;  ///< the CUDA index; -1 for the host, and for "cuda" (every GPU)
  int count = 1;     ///< virtual devices per physical device
  bool every_gpu() const { return kind == DeviceKind::cuda && ordinal < 0; }
};

/// A devices spec, parsed once: "cpu", "cpu/N", "cuda", "cuda:K", "cuda:K/N", comma-separated,
/// spaces ignored. The tree's one parser of the syntax: what a machine has (its GPUs, its cores)
/// is applied by virtual_count and expand. ConfigError (option "devices") for a bad spec.
class DevicesSpec {
 public:
  static DevicesSpec parse(const std::string& spec) {
    if (spec.empty()) throw ConfigError("devices", "empty device spec");
    DevicesSpec out;
    out.text_ = spec;
    for (std::size_t start = 0; start <= spec.size();) {
      const std::size_t comma = std::min(spec.find(',', start), spec.size());
      std::string item = spec.substr(start, comma - start);
      start = comma + 1;
      item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
      DeviceEntry e;
      const auto slash = item.find('/');
      const std::string dev = item.substr(0, slash);
      if (slash != std::string::npos) e.count = detail::parse_count(item.substr(slash + 1), spec);
      if (dev == "cuda" || dev.rfind("cuda:", 0) == 0) {
        e.kind = DeviceKind::cuda;
        if (dev != "cuda") {
          const std::string idx = dev.substr(5);
          if (idx.empty() || idx.size() > 3 || idx.find_first_not_of("0123456789") != std::string::npos)
            throw ConfigError("devices", "bad CUDA index in '" + item + "'");
          e.ordinal = std::stoi(idx);
        }
      } else if (dev != "cpu") {
        throw ConfigError("devices", "unknown device '" + item + "' (use cpu, cpu/N, cuda, cuda:K, cuda:K/N)");
      }
      out.entries_.push_back(e);
    }
    return out;
  }

  const std::vector<DeviceEntry>& entries() const { return entries_; }
  const std::string& text() const { return text_; }
  bool any_cuda() const {
    return std::any_of(entries_.begin(), entries_.end(),
                       [](const DeviceEntry& e) { return e.kind == DeviceKind::cuda; });
  }
  /// The virtual devices on a machine with `cuda_devices` GPUs ("cuda" is each of them).
  int virtual_count(int cuda_devices) const {
    int n = 0;
    for (const DeviceEntry& e : entries_) n += e.count * (e.every_gpu() ? cuda_devices : 1);
    return n;
  }

  /// The virtual devices on the machine `opt` describes. CPU cores are split evenly between all
  /// CPU replicas (the first ones get the remainder; at least one thread each); GPU replicas get one
  /// host thread each. ConfigError for a GPU the machine does not have.
  std::vector<VirtualDevice> expand(const DeviceOptions& opt = {}) const {
    std::vector<VirtualDevice> out;
    for (const DeviceEntry& e : entries_) {
      std::vector<int> ordinals = {e.ordinal};
      if (e.every_gpu()) {
        if (opt.cuda_devices == 0)
          throw ConfigError("devices", "'" + item_text(e) + "': this machine has no CUDA device");
        ordinals.clear();
        for (int k = 0; k < opt.cuda_devices; ++k) ordinals.push_back(k);
      } else if (e.kind == DeviceKind::cuda && e.ordinal >= opt.cuda_devices) {
        throw ConfigError("devices", "'" + item_text(e) + "': no such CUDA device (this machine has " +
                                         std::to_string(opt.cuda_devices) + ")");
      }
      for (int k : ordinals)
        for (int v = 0; v < e.count; ++v) {
          VirtualDevice d;
          d.kind = e.kind;
          d.ordinal = k;
          d.virtual_index = v;
          d.virtual_count = e.count;
          d.memory_cap_gb = e.kind == DeviceKind::cuda ? opt.memory_cap_gb : 0.0;
          out.push_back(d);
        }
    }
    split_threads(out, opt);
    return out;
  }

 private:
  static std::string item_text(const DeviceEntry& e) {
    std::string s = e.kind == DeviceKind::cpu ? "cpu" : e.every_gpu() ? "cuda" : "cuda:" + std::to_string(e.ordinal);
    return e.count > 1 ? s + "/" + std::to_string(e.count) : s;
  }
  static void split_threads(std::vector<VirtualDevice>& devs, const DeviceOptions& opt) {
    const int cores = opt.cpu_cores > 0 ? opt.cpu_cores : hardware_cores();
    const int n_cpu = static_cast<int>(
        std::count_if(devs.begin(), devs.end(), [](const VirtualDevice& d) { return d.kind == DeviceKind::cpu; }));
    int i = 0;
    for (auto& d : devs) {
      if (opt.threads_per_replica > 0) {
        d.threads = opt.threads_per_replica;
      } else if (d.kind == DeviceKind::cpu) {
        d.threads = std::max(1, cores / n_cpu + (i < cores % n_cpu ? 1 : 0));
        ++i;
      } else {
        d.threads = 1;
      }
    }
  }

  std::string text_;
  std::vector<DeviceEntry> entries_;
};

/// Expands a comma-separated device spec into virtual devices (DevicesSpec::parse, then expand).
inline std::vector<VirtualDevice> expand_devices(const std::string& spec, const DeviceOptions& opt = {}) {
  return DevicesSpec::parse(spec).expand(opt);
}

/// The spec's syntax alone (device names, CUDA indices of up to 3 digits, counts), not what this
/// machine has: an experiment file's devices are checked so when it is loaded, and the planner
/// expands each on the machine (expand_devices) before any run. ConfigError for a bad spec.
inline void check_device_spec(const std::string& spec) { DevicesSpec::parse(spec); }

}  // namespace vecbench
