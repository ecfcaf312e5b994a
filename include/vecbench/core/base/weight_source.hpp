// Where a model's weights came from, parsed once from the text its export records
// (vecbench_meta.json's "weight_source", tools/vecbench_export): "seed:N" (synthetic weights,
// --seed), "weights:FILE" (a checkpoint), "from-tf:FILE" (a TF graph), "" (unknown). Said
// wherever a model is named (the first line of `vectorize`, `run`'s header, a result file's model
// record, the report, `fid`'s refusal of synthetic features): the build's default model has
// synthetic weights, whose features are not Inception's.
#pragma once
#include <string>
#include <utility>

namespace vecbench {

/// What kind of weights a weight source names.
enum class WeightOrigin {
  unknown,     ///< nothing recorded (a model or store from before the record)
  synthetic,   ///< "seed:N": random weights from a seed, for tests and benchmarks
  checkpoint,  ///< "weights:FILE": a state_dict or a tool's weights file
  tf_graph,    ///< "from-tf:FILE": a TF GraphDef (classify_image_graph_def.pb)
  other,       ///< text of another version: kept and written back as it is
};

/// A model's weight source: its origin and detail (the seed, or the file's base name), with the
/// text it was recorded as, which is written back unchanged.
class WeightSource {
 public:
  WeightSource() = default;
  /// Never fails: a text this build does not know is WeightOrigin::other.
  static WeightSource parse(std::string text) {
    WeightSource w;
    w.text_ = std::move(text);
    static constexpr std::pair<const char*, WeightOrigin> kPrefixes[] = {{"seed:", WeightOrigin::synthetic},
                                                                         {"weights:", WeightOrigin::checkpoint},
                                                                         {"from-tf:", WeightOrigin::tf_graph}};
    w.origin_ = w.text_.empty() ? WeightOrigin::unknown : WeightOrigin::other;
    for (const auto& [prefix, origin] : kPrefixes) {
      const std::string p = prefix;
      if (w.text_.compare(0, p.size(), p) == 0) {
        w.origin_ = origin;
        w.detail_ = w.text_.substr(p.size());
        break;
      }
    }
    return w;
  }

  WeightOrigin origin() const { return origin_; }
  bool synthetic() const { return origin_ == WeightOrigin::synthetic; }
  bool known() const { return origin_ != WeightOrigin::unknown; }
  /// The seed (synthetic) or the file's base name (checkpoint, TF graph); "" otherwise.
  const std::string& detail() const { return detail_; }
  /// As recorded ("seed:0", "weights:pt_inception-2015-12-05.pth", ...); "" when unknown.
  const std::string& text() const { return text_; }
  bool operator==(const WeightSource& o) const { return text_ == o.text_; }
  bool operator!=(const WeightSource& o) const { return !(*this == o); }

  /// "synthetic weights (seed N): not Inception's trained features; ..." for synthetic weights,
  /// else "".
  std::string note() const {
    if (!synthetic()) return "";
    return "synthetic weights (seed " + detail_ +
           "): not Inception's trained features; for real ones export a model with "
           "tools/export_inception.py --from-tf GRAPH.pb or --weights FILE and pass --model";
  }

 private:
  WeightOrigin origin_ = WeightOrigin::unknown;
  std::string detail_;
  std::string text_;
};

}  // namespace vecbench
