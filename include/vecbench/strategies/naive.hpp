// `naive`: the seed's mistake, reproduced on purpose. TF's `tf.device` only placed graph nodes;
// one Python thread then ran a blocking `Session.run` per image on each device in turn, so the
// devices never worked at the same time. Here: the list is split into one contiguous chunk per
// device, and ONE thread of control runs chunk 1 on replica 1 (on its worker), waits for it,
// then chunk 2 on replica 2, and so on.
// Expect no speedup over `sequential` (and a slowdown when virtual devices split the cores).
#pragma once
#include <numeric>

#include "vecbench/strategies/sequential.hpp"

namespace vecbench {

class NaiveStrategy : public Strategy {
 public:
  std::string name() const override { return "naive"; }
  void run(RunContext& ctx) override {
    std::vector<std::size_t> ids(ctx.devices.size());
    std::iota(ids.begin(), ids.end(), std::size_t{0});
    detail::blocking_loop(ctx, ids, split_contiguous(ctx.todo.size(), ids.size()));
  }
};

}  // namespace vecbench
