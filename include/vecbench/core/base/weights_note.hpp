// What a model's weight source means for its features, said wherever a model is named (the first
// line of `vectorize`, `run`'s header, a result file's model record, the report): the build's
// default model has synthetic weights, whose features are not Inception's.
#pragma once
#include <string>

namespace vecbench {

/// Whether a weight source names synthetic weights: "seed:N" (tools/export_inception.py --seed),
/// not a checkpoint or a TF graph ("weights:FILE", "from-tf:FILE") nor unknown ("").
inline bool synthetic_weights(const std::string& weight_source) { return weight_source.rfind("seed:", 0) == 0; }

/// "synthetic weights (seed N): not Inception's trained features; ..." for synthetic weights
/// (synthetic_weights), else "".
inline std::string weights_note(const std::string& weight_source) {
  if (!synthetic_weights(weight_source)) return "";
  return "synthetic weights (seed " + weight_source.substr(5) +
         "): not Inception's trained features; for real ones export a model with "
         "tools/export_inception.py --from-tf GRAPH.pb or --weights FILE and pass --model";
}

}  // namespace vecbench
