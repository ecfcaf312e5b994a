// A tiny stand-in model for pipeline and strategy tests (and TSan/ASan builds): deterministic
// per-image features, an optional compute delay, and injectable failures.
#pragma once
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <thread>

#include "vecbench/core/base/error.hpp"
#include "vecbench/engine/model.hpp"

namespace vecbench::testing {

/// How many stub forwards run at once, and the most that ever did: whether replicas overlap,
/// counted, not inferred from wall time (which a loaded machine stretches).
struct ConcurrencyGauge {
  std::atomic<int> now{0}, peak{0};
  void enter() {
    const int n = ++now;
    for (int p = peak.load(); n > p && !peak.compare_exchange_weak(p, n);) {
    }
  }
  void leave() { --now; }
};

struct StubOptions {
  int input_size = 16;                        ///< image side
  int feature_dim = 8;                        ///< features per image
  double seconds_per_image = 0.0;             ///< simulated compute time (sleep), per image
  int fail_after_calls = -1;                  ///< forward throws on this call index (>= 0) of each replica
  int fail_device = -1;                       ///< only this replica's virtual_index fails (-1: all)
  bool fail_on_load = false;                  ///< the factory itself throws
  double prepare_s = 0.0;                     ///< Model::prepare sleeps this long (a replica that takes time to build)
  bool fail_in_prepare = false;               ///< Model::prepare throws (after prepare_s)
  std::shared_ptr<ConcurrencyGauge> gauge{};  ///< counts the forwards in flight (null: not counted)
  std::function<void()> on_prepare{};         ///< called by prepare() after prepare_s: a test orders events by it
};

/// features[j] = sum over pixels p of input[p] * w(j, p), computed per image in a fixed order,
/// so results do not depend on batch size, device or thread.
class StubModel : public Model {
 public:
  StubModel(const VirtualDevice& dev, StubOptions o) : dev_(dev), o_(o) {}
  int feature_dim() const override { return o_.feature_dim; }
  int input_size() const override { return o_.input_size; }
  ForwardTiming forward(const float* in, int n, float* out) override {
    const auto t0 = std::chrono::steady_clock::now();
    if (o_.fail_after_calls >= 0 && calls_ == o_.fail_after_calls &&
        (o_.fail_device < 0 || o_.fail_device == dev_.virtual_index))
      throw ReplicaError("stub replica " + dev_.name() + " failed on call " + std::to_string(calls_));
    ++calls_;
    struct InFlight {  // the gauge's count of this forward, left on every way out
      ConcurrencyGauge* g;
      explicit InFlight(ConcurrencyGauge* gauge) : g(gauge) {
        if (g) g->enter();
      }
      ~InFlight() {
        if (g) g->leave();
      }
    } in_flight(o_.gauge.get());
    const std::size_t per = static_cast<std::size_t>(o_.input_size) * o_.input_size * 3;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < o_.feature_dim; ++j) {
        double acc = 0.0;
        for (std::size_t p = 0; p < per; ++p)
          acc += in[i * per + p] * std::sin(0.01 * static_cast<double>((j + 1) * (p % 97 + 1)));
        out[static_cast<std::size_t>(i) * o_.feature_dim + j] = static_cast<float>(acc / static_cast<double>(per));
      }
    if (o_.seconds_per_image > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o_.seconds_per_image * n));
    ForwardTiming t;
    t.forward_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return t;
  }
  void prepare(int) override {
    if (o_.prepare_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o_.prepare_s));
    if (o_.on_prepare) o_.on_prepare();
    if (o_.fail_in_prepare && (o_.fail_device < 0 || o_.fail_device == dev_.virtual_index))
      throw ReplicaError("stub replica " + dev_.name() + " failed to build");
  }
  /// Warm-up does nothing here, so `fail_after_calls` counts timed calls only.
  void warmup(int, int) override {}
  int calls() const { return calls_; }

 private:
  VirtualDevice dev_;
  StubOptions o_;
  int calls_ = 0;
};

/// A factory of stub replicas; counts how many were made.
inline ModelFactory stub_factory(StubOptions o, std::atomic<int>* made = nullptr) {
  return [o, made](const VirtualDevice& d) -> std::unique_ptr<Model> {
    if (o.fail_on_load && (o.fail_device < 0 || o.fail_device == d.virtual_index))
      throw ReplicaError("stub replica failed to load on " + d.name());
    if (made) ++*made;
    return std::make_unique<StubModel>(d, o);
  };
}

}  // namespace vecbench::testing
