// Where the pipeline's batch buffers live: ordinary memory, or, on a CUDA run, page-locked
// ("pinned") memory that the device copies from directly, with no staging copy by the replica's
// host thread. The engine that has such memory provides it (engines.hpp, host_memory_for); the
// buffers reach the replicas through Batch::input (pipeline/batch.hpp), which batches keep and
// reuse for the run, so a run allocates about as many as it has in flight, not one a batch.
#pragma once
#include <cstddef>
#include <new>
#include <type_traits>
#include <vector>

namespace vecbench {

/// A source of host memory for batch buffers. Must outlive every buffer it gave out.
class HostMemory {
 public:
  virtual ~HostMemory() = default;
  /// `bytes` (at least 1); throws std::bad_alloc (or an Error saying why) when it cannot.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
  /// Readies `count` blocks of `bytes` before a run's clock starts, where making one is slow and
  /// freed blocks are kept (pinned memory); this default does nothing.
  virtual void reserve(std::size_t count, std::size_t bytes) {
    (void)count;
    (void)bytes;
  }
  /// What it is, for logs and results ("pinned (cudaHostAlloc)").
  virtual const char* name() const = 0;
};

/// A standard allocator over a HostMemory (null: operator new, the default). Propagates with
/// its container on copy, move and swap, so a buffer is always freed by the memory it came from.
template <class T>
class HostAllocator {
 public:
  using value_type = T;
  using propagate_on_container_copy_assignment = std::true_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  HostAllocator() noexcept = default;
  explicit HostAllocator(HostMemory* mem) noexcept : mem_(mem) {}
  template <class U>
  HostAllocator(const HostAllocator<U>& o) noexcept : mem_(o.memory()) {}  // NOLINT: rebinding is implicit
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    return static_cast<T*>(mem_ ? mem_->allocate(bytes) : ::operator new(bytes));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (mem_)
      mem_->deallocate(p, n * sizeof(T));
    else
      ::operator delete(p);
  }
  HostMemory* memory() const noexcept { return mem_; }
  template <class U>
  bool operator==(const HostAllocator<U>& o) const noexcept {
    return mem_ == o.memory();
  }
  template <class U>
  bool operator!=(const HostAllocator<U>& o) const noexcept {
    return mem_ != o.memory();
  }

 private:
  HostMemory* mem_ = nullptr;
};

/// A batch's input floats, in the run's host memory.
using HostFloats = std::vector<float, HostAllocator<float>>;

}  // namespace vecbench
