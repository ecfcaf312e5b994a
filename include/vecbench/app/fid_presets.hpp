// The FID tools vecbench matches (`--like TOOL` on vectorize, stats and fid): each preset is the
// tool's weights file, found where the tool itself keeps it, plus its input pipeline (decode,
// resize, scaling, feature layer), so that vecbench's FID is the number that tool prints. The
// weights are imported once into a TorchScript model (tools/export_inception.py --like TOOL),
// cached by the file's SHA-256 (a changed file is imported again), and the preset is recorded in
// the store's fingerprint ("like"), so that stores of different presets never mix.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "vecbench/core/files/trusted_file.hpp"
#include "vecbench/input/jpeg_decoder.hpp"
#include "vecbench/input/resize_formula.hpp"

namespace vecbench {

/// A FID tool whose numbers vecbench reproduces.
enum class FidTool {
  pytorch_fid,     ///< pytorch-fid 0.3.0: PIL RGB, ToTensor, bilinear (align_corners=False), 2x-1, FIDInception
  torch_fidelity,  ///< torch-fidelity 0.4: PIL RGB uint8, TF1 ResizeBilinear, (x-128)/128, inception-v3-compat
  tf,              ///< the seed's classify_image_graph_def.pb: DecodeJpeg (fast IDCT), ResizeBilinear, pool_3
  clean_fid,       ///< clean-fid 0.1.35 "clean": PIL RGB, PIL bicubic on float channels, (x-128)/128, NVIDIA's layers
  clean_fid_legacy_tensorflow,  ///< its "legacy_tensorflow": NVIDIA's file's own forward (TF1 resize, (x-128)/128)
  dgm_eval,  ///< dgm-eval (and EDM2's resize_mode 'pil'): PIL RGB, Pillow's bicubic on uint8, x/255, ImageNet mean/std
  edm2,      ///< EDM2 calculate_metrics.py, resize_mode 'torch': F.interpolate(bicubic, antialias) on floats, x/255,
             ///< ImageNet
  cmmd,      ///< google-research/cmmd: PIL, centre crop, Pillow's bicubic to 336 on uint8, x/255, CLIP's mean/std,
             ///< CLIP ViT-L/14@336px's image embedding L2-normalized
};

/// Where a tool keeps its weights file (after $VECBENCH_MODELS, which comes first for every tool).
enum class WeightsHome {
  torch_hub,    ///< $TORCH_HOME/hub/checkpoints (torch.hub's download folder)
  tf_tutorial,  ///< /tmp/imagenet, where TF's classify_image.py tutorial downloads its graph
  tmp,          ///< /tmp, where clean-fid downloads NVIDIA's inception-2015-12-05.pt (on Linux)
  clip_cache,   ///< ~/.cache/clip, where OpenAI's clip package downloads its files (clip.load's download_root)
};

/// A tool's way of feeding one encoder (engine/encoder.hpp): its weights file and its input pipeline.
struct FidPreset {
  FidTool tool;
  std::string name;          ///< the --like value
  std::string encoder;       ///< the encoder's name (inception-v3, dinov2-vit-l-14, vgg16, ...)
  std::string weights_file;  ///< the file name the tool downloads (into the folder `home` says)
  WeightsHome home;          ///< where the tool keeps it
  /// how tools/export_inception.py reads it: --weights (a state_dict, or NVIDIA's TorchScript) or
  /// --from-tf; the other encoders' import (tools/export_encoder.py) takes --weights
  std::string import_flag;
  ResizeMode resize;     ///< the tool's resize, as vecbench's mode
  JpegDecoder jpeg;      ///< the tool's JPEG arithmetic: exact (PIL's) or tf (DecodeJpeg's fast IDCT)
  std::string pipeline;  ///< decode, resize, scaling and layer, in words
  bool inception() const { return encoder == "inception-v3"; }
};

/// Every preset: Inception-v3's first, in the order `fid` and `stats` try them without --like
/// (pytorch-fid first: the most used tool), then each other encoder's, in the registry's order
/// (dgm-eval first for each DINOv2: FD_DINOv2's reference).
const std::vector<FidPreset>& fid_presets();
/// The preset of tool `name` for `encoder` ("": the tool's first encoder: inception-v3, or
/// dinov2-vit-l-14 for dgm-eval and edm2). "clean-fid-legacy-pytorch" names pytorch-fid's (the same
/// weights file and pipeline), "edm2-pil" dgm-eval's (EDM2's resize_mode 'pil' is dgm-eval's
/// preprocessing exactly). Throws ConfigError("--like"/"--encoder", ...) listing what exists.
const FidPreset& find_fid_preset(const std::string& name, const std::string& encoder = "");
/// The preset a model file's metadata names (its "like" and the encoder of its "arch"; null when none).
const FidPreset* preset_of_model(const std::string& like, const std::string& arch);

/// Where the preset's weights file is looked for, in order: $VECBENCH_MODELS, then the tool's own
/// folder: $TORCH_HOME/hub/checkpoints (TORCH_HOME defaulting to $XDG_CACHE_HOME/torch, else
/// ~/.cache/torch, as torch.hub does), /tmp/imagenet for the TF graph, /tmp for clean-fid's file.
std::vector<std::filesystem::path> weight_search_dirs(const FidPreset& p);
/// The files find_preset_weights tries, in order: the preset's file in each of weight_search_dirs;
/// then, for a CLIP encoder, the same OpenAI file where the encoder's other presets' tools keep it
/// and where OpenAI's clip package does (torch-fidelity's
/// $TORCH_HOME/hub/checkpoints/clip-vit-*-SHA256.pt, ~/.cache/clip/ViT-*.pt: both download the same
/// bytes from OpenAI), so one download serves --like torch-fidelity, clean-fid and cmmd alike.
std::vector<std::filesystem::path> weight_candidates(const FidPreset& p);
/// The preset's weights file, the first of weight_candidates that is there, open
/// (core/files/trusted_file.hpp): in every folder, $VECBENCH_MODELS and $TORCH_HOME's as much as /tmp's,
/// a file is taken only when every folder from "/" to it and the file are yours or root's and no
/// one else may write them (a sticky folder such as /tmp excepted), another user's link is not
/// followed, and a file that cannot be looked at is not taken; such a file is skipped, and
/// `refused` (when given) says why, naming the file and the cause (several: one a line).
std::optional<TrustedFile> find_preset_weights(const FidPreset& p, std::string* refused = nullptr);

/// The preset's TorchScript model for the open weights file `weights` (find_preset_weights): the
/// cache folder's models/<tool>-<sha256[:16]>.c1.pt (other encoders:
/// <tool>-<encoder>-<sha256[:16]>.pt) of the SHA-256 read from its descriptor, imported first when
/// absent (Debian's Python with tools/export_inception.py --arch tf2015 --weights FILE (--from-tf
/// FILE for tf) --like TOOL, or tools/export_encoder.py --encoder E --protocol TOOL --weights FILE;
/// a temp file renamed into place). The import reads a private copy made from the descriptor
/// (TrustedFile::copy_into, in models/, removed afterwards), hashed again as it is written (a
/// file changed in between is an IoError): what is imported is what was checked and hashed,
/// whatever the path names by then. A file the import refuses (not that encoder's weights: a
/// missing or mis-shaped key, a truncated file) is an IoError naming it and the cause.
std::string preset_model(const FidPreset& p, const TrustedFile& weights);

/// The model `stats` and `fid` vectorize images with, and why.
struct FidModelChoice {
  std::string path;                   ///< the TorchScript model
  const FidPreset* preset = nullptr;  ///< null: --model, or the build's default model
  std::string why;                    ///< for the first line
};
/// --model wins; else --like (its weights must be found: ConfigError saying where to put them);
/// else the first preset of `encoder` ("": inception-v3) whose weights are found; else, for
/// inception-v3, the build's default model (synthetic), for the others a ConfigError saying where
/// to put the file.
FidModelChoice choose_fid_model(const std::string& model_flag, const std::string& like_flag,
                                const std::string& encoder = "");

/// What to do when no weights of `encoder` ("": inception-v3) are there: which file to put where, per preset.
std::string where_to_put_weights(const std::string& encoder = "");

/// `vecbench models`: each preset's weights file (found or not, where it was looked for), its
/// SHA-256 and imported model. Returns 0.
int cmd_models();

}  // namespace vecbench
