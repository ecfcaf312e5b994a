// The TorchScript files of libvecbench_torch.so (private to src/engine/): a module loaded, a
// replica's module sharing one CPU copy of the weights, an export's metadata, its Inception layers
// with batch norm folded for the oneDNN engine.
#pragma once
#include <torch/script.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "vecbench/engine/onednn_inception.hpp"
#include "vecbench/engine/onednn_vit.hpp"

namespace vecbench::torch_detail {

/// The export's metadata (its vecbench_meta.json), {} when none or not JSON.
nlohmann::json parse_meta(const std::string& text);
/// `path` loaded on `device`, its metadata's text into `meta`; IoError naming the file.
torch::jit::Module load_module(const std::string& path, const torch::Device& device, std::string* meta);
/// A replica's module of `path` on the CPU whose tensors every replica shares: the file is loaded
/// once per process (keyed by its path, size and time), each replica gets a clone(inplace) of it:
/// its own class and methods (so its own executor), the same parameter and buffer tensors, which
/// forward only reads. A ViT-L/14 is 1.2 GB of fp32 weights: one copy for all replicas.
torch::jit::Module shared_cpu_module(const std::string& path, std::string* meta);
/// The layers of a tools/export_inception.py file, batch norm folded into each convolution
/// (a --fuse prepacked file holds them folded already), into `out` (made by the caller: the
/// struct's packed-weight cache belongs to the oneDNN engine, which this library does not link).
void read_inception_weights(const std::string& path, InceptionWeights& out);
/// The parameters and buffers of a vision transformer from tools/export_encoder.py (DINOv2, CLIP)
/// and its shape (width, patch, depth, heads, layer norm's epsilon, SwiGLU, CLIP's normalization),
/// into `out`; ReplicaError naming the file when it is not one or a tensor is missing.
void read_vit_weights(const std::string& path, VitWeights& out);
/// The metadata of the export at `path`.
nlohmann::json load_model_meta(const std::string& path);
/// How many module files this process loaded.
std::size_t module_loads();

}  // namespace vecbench::torch_detail
