// The parts of `vecbench vectorize` (src/app/vectorize.cpp) that its several-encoder form
// (src/app/vectorize_multi.cpp) runs too: the route, the input options, the writer's options and
// the run's settings are made the same way for one encoder and for each of several.
#pragma once
#include <string>
#include <vector>

#include "vecbench/app/commands.hpp"
#include "vecbench/dist/distributed_run.hpp"
#include "vecbench/engine/model_settings.hpp"
#include "vecbench/input/inputs.hpp"
#include "vecbench/output/writer.hpp"
#include "vecbench/pipeline/strategy.hpp"

namespace vecbench {
namespace vectorize_detail {

/// Whether the oneDNN engine runs on this CPU (built with it, and oneDNN has AVX2 code or better).
bool onednn_runs_here();
/// Whether the oneDNN engine runs the export `m` in precision `p`: Inception-v3, and DINOv2's and
/// CLIP's transformers in fp32 (engine/onednn_vit.hpp).
bool onednn_runs_model(const ModelInfo& m, Precision p);
/// Fills the route fields the flags left open from this machine's profile, else from the
/// defaults; returns where they came from.
std::string resolve_route(VectorizeArgs& a, const ModelInfo& model, int cores, int cuda);
/// Refuses (without --force) more CPU replicas than cores, or than the memory holds (each replica
/// holds every one of `models`).
void check_replicas_fit(const std::vector<VirtualDevice>& devs, int cores, const std::vector<std::string>& models,
                        bool force);
/// How file inputs are decoded and resized for `model`.
InputOptions input_options(const VectorizeArgs& a, const ModelInfo& model);
/// The output store's settings (its fingerprint from `a`, `model`, `in` and `source`).
WriterOptions writer_options(const VectorizeArgs& a, const ModelInfo& model, const InputOptions& in,
                             const ImageSource& source, const Distribution& dist);
/// The run's settings; `route_decoders`: the decode threads come from the route.
RunSettings run_settings(const VectorizeArgs& a, bool route_decoders, const Distribution& dist,
                         const std::vector<VirtualDevice>& devs);

}  // namespace vectorize_detail

/// `vecbench vectorize --encoders ...` (src/app/vectorize_multi.cpp).
int cmd_vectorize_encoders(const VectorizeArgs& args, const CommandHooks& hooks);

}  // namespace vecbench
