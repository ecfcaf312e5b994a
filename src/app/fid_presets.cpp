// The FID tools' presets (include/vecbench/app/fid_presets.hpp): their weights found where the
// tools keep them, imported once into TorchScript by the export tool, and `vecbench models`.
#include "vecbench/app/fid_presets.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <utility>

#include "vecbench/app/commands.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/system/subprocess.hpp"
#include "vecbench/engine/encoder.hpp"
#include "vecbench/engine/engines.hpp"

namespace vecbench {

namespace {
/// torch-fidelity 0.4's CLIP extractors: OpenAI's file, kept as hub/checkpoints/NAME-SHA256.pt
/// (its load_state_dict_from_url file_name, with the SHA-256 of OpenAI's download URL).
void add_clip_presets(std::vector<FidPreset>& all) {
  const std::pair<const char*, const char*> clip[] = {
      {"clip-vit-b-32", "40d365715913c9da98579312b702a82c18be219cc2a73407c4526f58eba950af"},
      {"clip-vit-l-14", "b8cca3fd41ae0c99ba7e8951adf17d267cdb84cd88be6f7c2e0eca1737a03836"},
      {"clip-vit-l-14-336px", "3035c92b350959924f9f00213499208652fc7ea050643e8b385c2dac08641f02"}};
  for (const auto& [e, sha] : clip) {
    const std::string size = std::to_string(find_encoder(e).input_size);
    all.push_back({FidTool::torch_fidelity, "torch-fidelity", e, std::string(e) + "-" + sha + ".pt",
                   WeightsHome::torch_hub, "--weights", ResizeMode::tf_legacy, JpegDecoder::exact,
                   "PIL decode to RGB uint8; TF1 ResizeBilinear to " + size + "x" + size +
                       " (align_corners=False, in float); (x-255 mean)/(255 std), CLIP's mean/std; OpenAI's image "
                       "tower (its fp16 weights in float32); the projected image embedding (torch-fidelity 0.4)"});
  }
  // CMMD's reference embeds with scenic's port of the same weights; OpenAI's file, where its clip
  // package keeps it, is what vecbench reads
  all.push_back({FidTool::cmmd, "cmmd", "clip-vit-l-14-336px", "ViT-L-14-336px.pt", WeightsHome::clip_cache,
                 "--weights", ResizeMode::center_crop_pil_bicubic_u8, JpegDecoder::exact,
                 "PIL decode (grayscale tiled to RGB); the centre square (PIL crop box ((w-s)//2, (h-s)//2), s = "
                 "min(w, h)); Pillow's bicubic to 336x336 on the uint8 image; x/255; CLIP's mean/std; ViT-L/14@336px's "
                 "image embedding, L2-normalized (google-research/cmmd)"});
  // clean-fid's CLIP-FID (model_name="clip_vit_b_32"): OpenAI's clip.load, which keeps the file in
  // ~/.cache/clip
  all.push_back({FidTool::clean_fid, "clean-fid", "clip-vit-b-32", "ViT-B-32.pt", WeightsHome::clip_cache, "--weights",
                 ResizeMode::pil_bicubic_u8_short_side_crop, JpegDecoder::exact,
                 "PIL decode to RGB uint8; torchvision's Resize(224, BICUBIC) (the shorter side to 224 by Pillow's "
                 "bicubic on the uint8 image) and CenterCrop(224); x/255; CLIP's mean/std; OpenAI's ViT-B/32 image "
                 "tower in float32 (clean-fid on the CPU; on a GPU it runs fp16); the projected image embedding "
                 "(clean-fid's CLIP-FID)"});
}

/// Each other encoder's presets: DINOv2 in dgm-eval's, EDM2's and torch-fidelity's pipelines,
/// VGG-16 and CLIP in torch-fidelity's.
void add_encoder_presets(std::vector<FidPreset>& all) {
  const char* const dinov2[] = {"dinov2-vit-s-14", "dinov2-vit-b-14", "dinov2-vit-l-14", "dinov2-vit-g-14"};
  for (const char* e : dinov2) {
    const std::string file = find_encoder(e).weights_file;
    all.push_back({FidTool::dgm_eval, "dgm-eval", e, file, WeightsHome::torch_hub, "--weights",
                   ResizeMode::pil_bicubic_u8, JpegDecoder::exact,
                   "PIL decode to RGB uint8; Pillow's bicubic (antialiased, 8-bit) to 224x224; x/255; ImageNet "
                   "mean/std; DINOv2 (position embedding interpolated to 16x16 as the hub does); the CLS token "
                   "after the final norm (dgm-eval; EDM2's resize_mode 'pil' is the same)"});
    all.push_back({FidTool::edm2, "edm2", e, file, WeightsHome::torch_hub, "--weights", ResizeMode::torch_bicubic_aa,
                   JpegDecoder::exact,
                   "PIL decode to RGB uint8; F.interpolate(bicubic, antialias=True) to 224x224 on floats; x/255; "
                   "ImageNet mean/std; DINOv2; the CLS token after the final norm (EDM2's resize_mode 'torch')"});
    all.push_back({FidTool::torch_fidelity, "torch-fidelity", e, file, WeightsHome::torch_hub, "--weights",
                   ResizeMode::tf_legacy, JpegDecoder::exact,
                   "PIL decode to RGB uint8; TF1 ResizeBilinear to 224x224 (align_corners=False, in float); "
                   "(x-255 mean)/(255 std); DINOv2; the CLS token after the final norm (torch-fidelity 0.4, "
                   "torchmetrics' FrechetDistanceDinoV2)"});
  }
  all.push_back({FidTool::torch_fidelity, "torch-fidelity", "vgg16", find_encoder("vgg16").weights_file,
                 WeightsHome::torch_hub, "--weights", ResizeMode::tf_legacy, JpegDecoder::exact,
                 "PIL decode to RGB uint8; TF1 ResizeBilinear to 224x224 (align_corners=False, in float); "
                 "(x-255 mean)/(255 std); torchvision's VGG-16 to fc2, ReLU (4096): torch-fidelity's fc2_relu"});
  add_clip_presets(all);
}
}  // namespace

const std::vector<FidPreset>& fid_presets() {
  static const std::vector<FidPreset> presets = [] {
    const std::string inc = "inception-v3";
    std::vector<FidPreset> all = {
        {FidTool::pytorch_fid, "pytorch-fid", inc, "pt_inception-2015-12-05-6726825d.pth", WeightsHome::torch_hub,
         "--weights", ResizeMode::bilinear, JpegDecoder::exact,
         "PIL decode to RGB; x/255; bilinear resize to 299 (half-pixel centres, no antialiasing, in float); 2x-1; "
         "FIDInceptionA/C/E (tf2015); pool_3 (2048)"},
        {FidTool::torch_fidelity, "torch-fidelity", inc, "weights-inception-2015-12-05-6726825d.pth",
         WeightsHome::torch_hub, "--weights", ResizeMode::tf_legacy, JpegDecoder::exact,
         "PIL decode to RGB uint8; TF1 ResizeBilinear to 299 (align_corners=False, in float); (x-128)/128; "
         "inception-v3-compat (tf2015); pool_3 (2048)"},
        {FidTool::tf, "tf", inc, "classify_image_graph_def.pb", WeightsHome::tf_tutorial, "--from-tf",
         ResizeMode::tf_legacy, JpegDecoder::tf,
         "JPEGs as TF's DecodeJpeg (libjpeg's fast integer IDCT), other formats exactly, to RGB uint8; the graph's "
         "ResizeBilinear to 299 (align_corners=False, in float); (x-128)/128; pool_3 (2048), as TTUR's and the "
         "seed's TensorFlow 1 graph"},
        // both clean-fid modes that are not pytorch-fid's run NVIDIA's TorchScript file: one
        // weights file, two pipelines (two presets, two stores)
        {FidTool::clean_fid, "clean-fid", inc, "inception-2015-12-05.pt", WeightsHome::tmp, "--weights",
         ResizeMode::pil_bicubic, JpegDecoder::exact,
         "PIL decode to RGB uint8; each channel as a float image, PIL's bicubic (antialiased) to 299, clipped to "
         "0..255; (x-128)/128; the layers of NVIDIA's inception-2015-12-05.pt (tf2015); pool_3 (2048): clean-fid's "
         "mode \"clean\""},
        {FidTool::clean_fid_legacy_tensorflow, "clean-fid-legacy-tensorflow", inc, "inception-2015-12-05.pt",
         WeightsHome::tmp, "--weights", ResizeMode::tf_legacy, JpegDecoder::exact,
         "PIL decode to RGB uint8; the file's own resize to 299 (grid_sample: TF1 ResizeBilinear, align_corners=False, "
         "in float); (x-128)/128; NVIDIA's inception-2015-12-05.pt (tf2015); pool_3 (2048): clean-fid's mode "
         "\"legacy_tensorflow\""},
    };
    add_encoder_presets(all);
    return all;
  }();
  return presets;
}

const FidPreset& find_fid_preset(const std::string& name, const std::string& encoder) {
  // clean-fid's legacy_pytorch mode is pytorch-fid's network on the same weights file (it loads
  // pt_inception-2015-12-05-6726825d.pth the same way) after F.interpolate(bilinear,
  // align_corners=False) on 0..255 floats and x/255, then 2x-1: pytorch-fid's features. EDM2's
  // resize_mode 'pil' is dgm-eval's preprocessing, operation for operation.
  const std::string tool = name == "clean-fid-legacy-pytorch" ? "pytorch-fid" : name == "edm2-pil" ? "dgm-eval" : name;
  if (!encoder.empty()) find_encoder(encoder);  // an unknown name is refused as such
  // a tool's default encoder: Inception-v3 where it has it, else DINOv2 ViT-L/14 (FD_DINOv2's), else
  // CLIP ViT-L/14@336px (CMMD's)
  for (const char* e : {"inception-v3", "dinov2-vit-l-14", "clip-vit-l-14-336px"})
    for (const auto& p : fid_presets())
      if (encoder.empty() && tool == p.name && p.encoder == e) return p;
  std::string names, encoders;
  for (const auto& p : fid_presets()) {
    if (tool == p.name && encoder == p.encoder) return p;
    if (names.find(p.name) == std::string::npos) names += (names.empty() ? "" : ", ") + p.name;
    if (tool == p.name) encoders += (encoders.empty() ? "" : ", ") + p.encoder;
  }
  if (!encoders.empty())
    throw ConfigError("--encoder", encoder + ": " + tool + " has no preset for it (its encoders: " + encoders + ")");
  throw ConfigError("--like",
                    "unknown tool '" + name + "' (use one of: " + names + ", clean-fid-legacy-pytorch, edm2-pil)");
}

const FidPreset* preset_of_model(const std::string& like, const std::string& arch) {
  const EncoderSpec* e = encoder_of_arch(arch);
  for (const auto& p : fid_presets())
    if (like == p.name && (e ? p.encoder == e->name : p.inception())) return &p;
  return nullptr;
}

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : "";
}

fs::path torch_home() {  // torch.hub._get_torch_home
  if (const std::string t = env("TORCH_HOME"); !t.empty()) return t;
  if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) return fs::path(x) / "torch";
  return fs::path(env("HOME").empty() ? "/root" : env("HOME")) / ".cache" / "torch";
}

/// Why the import refused: the reason it wrote to its --error-file (the export tools' refusals),
/// else the last non-empty line of its output (a crash: Python's last traceback line names it).
std::string import_refusal(const fs::path& error_file, const std::string& output) {
  std::ifstream in(error_file);
  const std::string why((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!why.empty()) return why;
  std::istringstream lines(output);
  std::string line, last;
  while (std::getline(lines, line))
    if (!line.empty()) last = line;
  return last;
}

/// The cache folder's model for the weights file of SHA-256 `sha` under preset `p`. ".c1": the
/// export keeps the classifier (`metrics --isc`); models imported before it are imported again.
fs::path preset_model_path(const FidPreset& p, const std::string& sha) {
  if (!p.inception()) return cache_dir() / "models" / (p.name + "-" + p.encoder + "-" + sha.substr(0, 16) + ".pt");
  return cache_dir() / "models" / (p.name + "-" + sha.substr(0, 16) + ".c1.pt");
}

/// The import's message `line` with the private copy's path replaced by the path the file was found at.
std::string as_named(std::string line, const PrivateCopy& copy, const TrustedFile& weights) {
  const std::string from = copy.path().string(), to = weights.path().string();
  for (std::size_t at = line.find(from); at != std::string::npos; at = line.find(from, at + to.size()))
    line.replace(at, from.size(), to);
  return line;
}

/// The import command of `p`'s weights file `weights` into `out`.
std::vector<std::string> import_command(const FidPreset& p, const fs::path& weights, const fs::path& out,
                                        const fs::path& error_file) {
  const std::string tools = tools_dir() + "/";
  if (!p.inception())
    return {VECBENCH_PYTHON, tools + "export_encoder.py",
            "--encoder",     p.encoder,
            "--protocol",    p.name,
            "--weights",     weights.string(),
            "--out",         out.string(),
            "--error-file",  error_file.string()};
  return {VECBENCH_PYTHON, tools + "export_inception.py",
          "--arch",        "tf2015",
          "--like",        p.name,
          p.import_flag,   weights.string(),
          "--out",         out.string(),
          "--error-file",  error_file.string()};
}

/// The folder the tool of `home` keeps its file in.
fs::path home_dir(WeightsHome home) {
  switch (home) {
    case WeightsHome::torch_hub:
      return torch_home() / "hub" / "checkpoints";
    case WeightsHome::tf_tutorial:
      return "/tmp/imagenet";
    case WeightsHome::tmp:  // clean-fid: "./" on Windows, "/tmp" elsewhere (features.feature_extractor)
      return "/tmp";
    case WeightsHome::clip_cache:  // clip.load: os.path.expanduser("~/.cache/clip")
      return fs::path(env("HOME").empty() ? "/root" : env("HOME")) / ".cache" / "clip";
  }
  return {};
}
}  // namespace

std::vector<fs::path> weight_search_dirs(const FidPreset& p) {
  std::vector<fs::path> dirs;
  if (const std::string m = env("VECBENCH_MODELS"); !m.empty()) dirs.emplace_back(m);
  dirs.push_back(home_dir(p.home));
  return dirs;
}

std::vector<fs::path> weight_candidates(const FidPreset& p) {
  std::vector<fs::path> files;
  for (const fs::path& dir : weight_search_dirs(p)) files.push_back(dir / p.weights_file);
  if (p.encoder.rfind("clip-", 0) != 0) return files;
  const auto add = [&files](const fs::path& f) {
    if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
  };
  for (const FidPreset& q : fid_presets())
    if (q.encoder == p.encoder) add(home_dir(q.home) / q.weights_file);
  add(home_dir(WeightsHome::clip_cache) / find_encoder(p.encoder).weights_file);  // the clip package's name
  return files;
}

std::optional<TrustedFile> find_preset_weights(const FidPreset& p, std::string* refused) {
  // every folder by the same rules: whether it is shared is what it is (its owner, who may
  // write it), not its place in the list (core/files/trusted_file.hpp)
  for (const fs::path& file : weight_candidates(p)) {
    TrustedOpen t = open_trusted(file);
    if (t.verdict == Trust::ok) return std::move(t.file);
    if (t.verdict == Trust::refused && refused)
      *refused += (refused->empty() ? "" : "\n") + t.why +
                  " (put it where no one else may write: a folder of yours that $VECBENCH_MODELS names)";
  }
  return std::nullopt;
}

std::string preset_model(const FidPreset& p, const TrustedFile& weights) {
  const std::string sha = weights.sha256();
  const fs::path model = preset_model_path(p, sha), dir = model.parent_path();
  std::error_code ec;
  if (fs::is_regular_file(model, ec)) {
    const ModelInfo m = read_model_info(model.string());
    if (m.weight_sha256 == sha && preset_of_model(m.like, m.arch) == &p) return model.string();
  }
  fs::create_directories(dir, ec);
  std::cerr << "vecbench: importing " << p.name << "'s weights " << weights.path().string() << " (sha256 "
            << sha.substr(0, 16) << ") into " << model.string() << " (once per weights file)\n";
  // the import reads a copy of the checked file's bytes that only this user can reach, not the path
  const PrivateCopy copy = weights.copy_into(dir);
  if (copy.sha256() != sha)
    throw IoError(weights.path().string(), "changed while it was read (sha256 " + sha.substr(0, 16) + ", then " +
                                               copy.sha256().substr(0, 16) + "): not imported");
  const fs::path tmp = dir / (".import-" + std::to_string(::getpid()) + "-" + model.filename().string());
  const fs::path log = dir / (".import-" + std::to_string(::getpid()) + ".log");
  const fs::path why = dir / (".import-" + std::to_string(::getpid()) + ".why");
  fs::remove(why, ec);
  const int rc = run_program(import_command(p, copy.path(), tmp, why), log.string());
  std::ifstream said(log);
  const std::string output((std::istreambuf_iterator<char>(said)), std::istreambuf_iterator<char>());
  const std::string refusal = rc != 0 ? import_refusal(why, output) : "";
  fs::remove(log, ec);
  fs::remove(why, ec);
  if (rc != 0) {
    fs::remove(tmp, ec);
    throw IoError(weights.path().string(),
                  "not usable as " + p.name + "'s " + (p.inception() ? "Inception" : p.encoder) + " weights (" +
                      p.weights_file + "): the import said: " + as_named(refusal, copy, weights));
  }
  fs::rename(tmp, model, ec);
  if (ec) throw IoError(model.string(), "cannot move the imported model into place: " + ec.message());
  sync_directory(dir);
  return model.string();
}

std::string where_to_put_weights(const std::string& encoder) {
  std::string s;
  for (const auto& p : fid_presets())
    if (p.encoder == (encoder.empty() ? "inception-v3" : encoder))
      s += "\n  " + p.name + ": " + (weight_search_dirs(p).back() / p.weights_file).string();
  s += "\n(or any of these files in the folder $VECBENCH_MODELS names), or pass --model FILE.pt "
       "(tools/export_inception.py --from-tf classify_image_graph_def.pb or --weights FILE; "
       "tools/export_encoder.py for the other encoders)";
  return s;
}

namespace {
/// `p`'s weights found, imported and chosen, with `why` saying how.
FidModelChoice preset_choice(const FidPreset& p, const TrustedFile& weights, const std::string& why) {
  FidModelChoice c;
  c.path = preset_model(p, weights);
  c.preset = &p;
  c.why = why;
  return c;
}
}  // namespace

FidModelChoice choose_fid_model(const std::string& model_flag, const std::string& like_flag,
                                const std::string& encoder) {
  FidModelChoice c;
  if (!model_flag.empty() && !like_flag.empty())
    throw ConfigError("--like", "and --model name two models: pass one of them");
  if (!model_flag.empty()) {
    const ModelInfo m = read_model_info(model_flag);
    const EncoderSpec* e = encoder_of_arch(m.arch);
    if (!encoder.empty() && e && encoder != e->name)
      throw ConfigError("--encoder", encoder + ": --model " + model_flag + " is " + e->name);
    c.path = model_flag;
    c.preset = preset_of_model(m.like, m.arch);
    c.why = "--model " + model_flag;
    return c;
  }
  if (!like_flag.empty()) {
    const FidPreset& p = find_fid_preset(like_flag, encoder);
    std::string refused;
    const auto w = find_preset_weights(p, &refused);
    if (!w && !refused.empty()) throw ConfigError("--like", refused);
    if (!w) {
      std::string where;
      for (const auto& d : weight_search_dirs(p)) where += "\n  " + (d / p.weights_file).string();
      throw ConfigError("--like", p.name + "'s " + p.encoder + " weights file " + p.weights_file +
                                      " is not in any of the folders it is looked for in:" + where +
                                      "\nput it there (the file " + p.name + " downloads) and run again");
    }
    return preset_choice(p, *w, "--like " + p.name + " (" + p.encoder + "): " + w->path().string());
  }
  const std::string enc = encoder.empty() ? "inception-v3" : find_encoder(encoder).name;
  const FidPreset* first = nullptr;
  std::string refused;  // files found but not used: said, not silently passed over
  for (const auto& p : fid_presets()) {
    if (p.encoder != enc) continue;
    if (!first) first = &p;
    std::string why, line;
    const auto w = find_preset_weights(p, &why);
    for (std::istringstream lines(why); std::getline(lines, line);)  // each file once (clean-fid's two presets)
      if (refused.find(line) == std::string::npos) {
        std::cerr << "vecbench: warning: " << line << "\n";
        refused += "\n" + line;
      }
    if (w)
      return preset_choice(p, *w,
                           p.name + "'s preset: its " + p.encoder + " weights were found at " + w->path().string() +
                               (&p == first ? " (" + p.name + " comes first for " + p.encoder + ")"
                                            : " (no " + first->name + " weights used)") +
                               "; --like TOOL chooses another");
  }
  if (enc != "inception-v3")
    throw ConfigError("--encoder", enc + ": no weights file found; put it where a tool keeps it:" +
                                       where_to_put_weights(enc) + (refused.empty() ? "" : "\nrefused:" + refused));
  c.path = default_model();
  c.why = std::string("the build's default model: no FID tool's weights were found") +
          (refused.empty() ? "" : " (or they were refused: see the warnings above)");
  return c;
}

int cmd_models() {
  std::string encoder;
  for (const auto& p : fid_presets()) {
    if (p.encoder != encoder)
      std::cout << "encoder " << (encoder = p.encoder) << " (" << find_encoder(encoder).width
                << " floats: " << find_encoder(encoder).output << ")\n";
    std::cout << "  " << p.name << ": " << p.weights_file;
    std::string refused;
    const auto w = find_preset_weights(p, &refused);
    if (!refused.empty()) {
      for (std::size_t at = refused.find('\n'); at != std::string::npos; at = refused.find('\n', at + 1))
        refused.insert(at + 1, "    refused: ");
      std::cout << ": refused: " << refused << "\n";
      if (!w) continue;
      std::cout << "  " << p.name << ": " << p.weights_file;
    }
    if (!w) {
      std::cout << ": not found (looked for in";
      for (const auto& d : weight_search_dirs(p)) std::cout << " " << d.string();
      std::cout << ")\n";
      continue;
    }
    const std::string sha = w->sha256();
    const fs::path model = preset_model_path(p, sha);
    std::error_code ec;
    std::cout << ": " << w->path().string() << " sha256 " << sha << "\n    model "
              << (fs::is_regular_file(model, ec) ? model.string() : "(imported on first use)") << "\n    pipeline "
              << p.pipeline << "\n";
  }
  const ModelInfo d = read_model_info(default_model());
  std::cout << "default model: " << default_model() << " (" << (d.synthetic() ? "synthetic weights, " : "")
            << d.weight_source.text() << ")\n";
  return 0;
}

}  // namespace vecbench
