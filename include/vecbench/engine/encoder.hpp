// The encoders vecbench computes features with: Inception-v3 (pool_3, FID's), DINOv2 ViT-S/B/L/g 14
// (the CLS token after the final norm: FD_DINOv2's, dgm-eval's and EDM2's), VGG-16 (fc2 after
// ReLU: torch-fidelity's default for precision/recall) and CLIP's image towers ViT-B/32, ViT-L/14
// and ViT-L/14@336px (the projected image embedding: torch-fidelity's CLIP extractors, CMMD's
// encoder). An encoder is a name, an input size, a
// width and the weights file the tools download; how a tool feeds it (decode, resize, scaling)
// is a preset (app/fid_presets.hpp), and what a model file holds says its own metadata (the
// export's "arch": an Inception architecture, or the encoder's name). docs/encoders.md.
#pragma once
#include <string>
#include <vector>

#include "vecbench/core/base/error.hpp"

namespace vecbench {

/// One encoder of the registry.
struct EncoderSpec {
  const char* name;  ///< the --encoder value
  int input_size;    ///< pixels per side the network takes
  int width;         ///< floats per feature vector
  /// the file torch.hub / torchvision / OpenAI's clip download ("" for Inception: each tool has its own; a tool
  /// may keep it under another name: its preset says)
  const char* weights_file;
  const char* output;   ///< what the vector is, in words
  const char* fd_name;  ///< how a Fréchet distance of these features is called in papers
  bool non_negative;    ///< every feature is >= 0 (a ReLU output or an average of them)
};

/// Every encoder, Inception-v3 first.
inline const std::vector<EncoderSpec>& encoder_registry() {
  static const std::vector<EncoderSpec> all = {
      {"inception-v3", 299, 2048, "", "pool_3, the 2048 averages after Mixed_7c", "FID", true},
      {"dinov2-vit-s-14", 224, 384, "dinov2_vits14_pretrain.pth", "the CLS token after the final norm", "FD_DINOv2",
       false},
      {"dinov2-vit-b-14", 224, 768, "dinov2_vitb14_pretrain.pth", "the CLS token after the final norm", "FD_DINOv2",
       false},
      {"dinov2-vit-l-14", 224, 1024, "dinov2_vitl14_pretrain.pth", "the CLS token after the final norm", "FD_DINOv2",
       false},
      {"dinov2-vit-g-14", 224, 1536, "dinov2_vitg14_pretrain.pth", "the CLS token after the final norm", "FD_DINOv2",
       false},
      {"vgg16", 224, 4096, "vgg16-397923af.pth", "fc2 after its ReLU (torch-fidelity's fc2_relu)", "FD_VGG16", true},
      {"clip-vit-b-32", 224, 512, "ViT-B-32.pt", "the projected image embedding", "FD_CLIP", false},
      {"clip-vit-l-14", 224, 768, "ViT-L-14.pt", "the projected image embedding", "FD_CLIP", false},
      {"clip-vit-l-14-336px", 336, 768, "ViT-L-14-336px.pt", "the projected image embedding", "FD_CLIP", false},
  };
  return all;
}

/// The name every list and error shows: "inception-v3, dinov2-vit-s-14, ...".
inline std::string encoder_names() {
  std::string s;
  for (const auto& e : encoder_registry()) s += (s.empty() ? "" : ", ") + std::string(e.name);
  return s;
}

/// The encoder named `name`; ConfigError("--encoder", ...) listing the names otherwise.
inline const EncoderSpec& find_encoder(const std::string& name) {
  for (const auto& e : encoder_registry())
    if (name == e.name) return e;
  throw ConfigError("--encoder", "unknown encoder '" + name + "' (use one of: " + encoder_names() + ")");
}

/// The encoder of a model file whose export metadata says `arch` (Inception's architectures,
/// tf2015 and torchvision, are inception-v3); null when it names none (not an export).
inline const EncoderSpec* encoder_of_arch(const std::string& arch) {
  if (arch == "tf2015" || arch == "torchvision") return &encoder_registry().front();
  for (const auto& e : encoder_registry())
    if (arch == e.name) return &e;
  return nullptr;
}

/// Whether `arch` is one of Inception-v3's (the oneDNN engine and the classifier need one).
inline bool inception_arch(const std::string& arch) { return arch == "tf2015" || arch == "torchvision"; }

/// Whether `arch` is one of the registry's vision transformers (DINOv2's, CLIP's image towers):
/// what the oneDNN engine's transformer route runs (engine/onednn_vit.hpp).
inline bool vit_arch(const std::string& arch) {
  return encoder_of_arch(arch) && (arch.rfind("dinov2-vit-", 0) == 0 || arch.rfind("clip-vit-", 0) == 0);
}

}  // namespace vecbench
