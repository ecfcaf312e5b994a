// What the weights file and the packed-weights file share (private to src/engine/): a file mapped
// read-only, the folded weights' checksum, the payload's alignment.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "vecbench/engine/onednn_inception.hpp"

namespace vecbench::weights_detail {

/// The checksum of the payload: every layer's weights then bias, in the order of `w.convs`, the
/// order the file stores them in (its header lists the layers that way).
std::string payload_xxh3(const InceptionWeights& w);

constexpr std::size_t kPayloadAlign = 64;

/// The whole of `path` mapped read-only (its pages come from the page cache: nothing is copied
/// or zeroed), unmapped when the last holder lets go; null when it cannot be mapped. `populate`:
/// every page mapped now (a file that is read whole at once), else as it is read.
std::shared_ptr<const void> map_file(const std::string& path, std::size_t* size, bool populate = true);

}  // namespace vecbench::weights_detail
