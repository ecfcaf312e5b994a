// The reference a strategy test compares with: every input of a source run by one stub replica,
// sequential, on the CPU.
#pragma once
#include <memory>

#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/stub_model.hpp"

namespace vecbench::testing {

/// The features of every input of `src` from the sequential strategy on one stub replica made
/// with `o` (stub features depend on nothing else: batch, device, thread).
inline std::unique_ptr<MemorySink> stub_reference(const ImageSource& src, const StubOptions& o) {
  auto sink = std::make_unique<MemorySink>(src.size());
  DeviceOptions d;
  d.cpu_cores = 1;
  run_strategy("sequential", src, all_indices(src.size()), expand_devices("cpu", d), stub_factory(o), *sink,
               RunSettings{}, o.input_size);
  return sink;
}

}  // namespace vecbench::testing
