// The store and metrics commands' options (src/app/cli_parts.hpp): verify, stats, fid, models,
// metrics.
#include "cli_parts.hpp"

#include <string>

#include "vecbench/input/resize.hpp"

namespace vecbench {
namespace cli {

/// stats, fid: the model image inputs are vectorized with, and where.
void add_fid_model_options(CLI::App* cmd, FidModelArgs& m) {
  cmd->add_option("--model", m.model,
                  "Image inputs: this TorchScript model (default: the first FID tool's weights found, pytorch-fid's "
                  "first: `vecbench models`)");
  cmd->add_option(
      "--like", m.like,
      "pytorch-fid | torch-fidelity | clean-fid | clean-fid-legacy-tensorflow | clean-fid-legacy-pytorch | tf | "
      "dgm-eval | edm2 | edm2-pil | cmmd: that tool's weights and exact pipeline for image inputs; stores made "
      "otherwise are refused");
  cmd->add_option("--encoder", m.encoder,
                  "inception-v3 (default) | dinov2-vit-s-14 | dinov2-vit-b-14 | dinov2-vit-l-14 | dinov2-vit-g-14 | "
                  "vgg16 | clip-vit-b-32 | clip-vit-l-14 | clip-vit-l-14-336px: the features the figures are of; "
                  "stores of another encoder are refused (docs/encoders.md)");
  cmd->add_flag("--allow-synthetic-weights", m.allow_synthetic,
                "Compute from synthetic (random) weights anyway (refused by default); every figure then says so");
  cmd->add_option("--store", m.store_root,
                  "Where image inputs are vectorized (one store per input and model below it; default "
                  "$VECBENCH_CACHE/stores, else $XDG_CACHE_HOME/vecbench/stores, else ~/.cache/vecbench/stores)");
}

/// verify, stats, fid: reading a store's vectors back.
void add_store_commands(CLI::App& app, Cli& c) {
  c.models = app.add_subcommand(
      "models",
      "Each encoder's weights files vecbench looks for, per tool (Inception-v3: pytorch-fid's, torch-fidelity's, the "
      "TF graph, clean-fid's; DINOv2 and VGG-16: the hub's and torchvision's), where, which were found, their SHA-256 "
      "and imported models");
  c.ver = app.add_subcommand("verify",
                             "Re-read every stored vector of an output folder against its manifest line and checksum; "
                             "print each missing, truncated or corrupted one (BAD input: file: why). Exit 0 all good, "
                             "2 some bad, 1 error, 3 the folder is in use");
  c.ver->add_option("out", c.verify_dir, "Output directory of vectorize")->required();
  c.ver->add_flag("--repair", c.verify_repair,
                  "Move the files holding bad vectors into OUT/corrupt-<UTC>/ so that the next vectorize redoes "
                  "their inputs (a shard's other rows too)");
  c.ver->add_option("--progress", c.verify_progress, "Seconds between progress lines on stderr (0: none)")
      ->capture_default_str();

  c.sts = app.add_subcommand("stats",
                             "FID statistics of stored features: mu and sigma in float64 (pytorch-fid's and TTUR's "
                             ".npz keys, plus n, the fingerprint and the vecbench version), one streaming pass");
  c.sts
      ->add_option("in", c.stats_args.in,
                   "An output folder of vectorize, a float32 .npy feature matrix [N, dim], or images (a folder, "
                   "list or file: vectorized first, default route, into a resumable store)")
      ->required();
  add_fid_model_options(c.sts, c.stats_args.m);
  c.sts->add_option("--out", c.stats_args.out, "The .npz file to write")->required();
  c.fid = app.add_subcommand("fid",
                             "FID between two sides (output folders, .npy feature matrices, .npz stats files of "
                             "vecbench, pytorch-fid, TTUR, clean-fid or ADM, EDM2's .pkl, or images: vectorized "
                             "first); FID (another encoder's Frechet distance, e.g. FD_DINOv2, with --encoder) is "
                             "the last line");
  c.fid->add_option("a", c.fid_args.a, "First side")->required();
  c.fid->add_option("b", c.fid_args.b, "Second side")->required();
  c.fid->add_option("--json", c.fid_args.json_out, "Also write fid, n_a, n_b, the fingerprints and warnings here");
  c.fid->add_flag("--kid", c.fid_args.kid, "Also KID as clean-fid computes it (needs features, not stats files)");
  c.fid->add_option("--kid-subsets", c.fid_args.kid_subsets, "KID: random subsets")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  c.fid
      ->add_option("--kid-subset-size", c.fid_args.kid_subset_size,
                   "KID: vectors per subset and side (capped at the smaller side)")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000000));
  c.fid->add_option("--seed", c.fid_args.seed, "KID: the subsets' random seed")->capture_default_str();
  add_fid_model_options(c.fid, c.fid_args.m);
  c.fid->add_flag("--allow-mismatch", c.fid_args.allow_mismatch,
                  "Compare sides whose fingerprints differ (another model, resize or decode): refused by default");
}

/// metrics: IS, FID, KID, precision/recall and density/coverage from the same stores.
void add_metrics_command(CLI::App& app, Cli& c) {
  MetricsArgs& m = c.met_args;
  c.met = app.add_subcommand("metrics",
                             "Generative-model metrics of A (the generated set) against B (the real set): the "
                             "Inception Score of A from its stored pool_3 vectors and the model's classifier "
                             "(torch-fidelity's isc), FID, KID (clean-fid's), CMMD, precision/recall (torch-fidelity's "
                             "prc, k=3) and density/coverage (prdc, k=5); k-NN distances in bounded memory. Without "
                             "a metric flag: --isc for one side, --fid --kid --prc --prdc for two");
  c.met->add_option("a", m.a, "The generated set: an output folder, a .npy feature matrix, or images")->required();
  c.met->add_option("b", m.b, "The real set (the same kinds)");
  c.met->add_flag("--isc", m.isc, "Inception Score of A (needs the model's classifier: --model or --like)");
  c.met->add_flag("--fid", m.fid, "FID of A and B (with --encoder: that encoder's Frechet distance)");
  c.met->add_flag("--fd-dinov2", m.fd_dinov2,
                  "FD_DINOv2 of A and B too: DINOv2 ViT-L/14 features of the same inputs (--like's DINOv2 protocol, "
                  "else dgm-eval's; a store of several encoders gives its dinov2-vit-l-14 one; docs/encoders.md)");
  c.met->add_flag("--cmmd", m.cmmd,
                  "CMMD of A and B (Jayasumana et al. 2024, google-research/cmmd): the MMD of their CLIP "
                  "ViT-L/14@336px embeddings (images embedded as the reference does, --like cmmd, whatever --like "
                  "the other metrics use; a store of another encoder refused; a .npy matrix as it is), Gaussian "
                  "kernel sigma 10, x 1000, float64 in blocks on every core (docs/metrics.md)");
  c.met
      ->add_option("--cmmd-batch", m.cmmd_batch,
                   "CMMD: the reference's batch size: each side's rows past its last full batch (in sorted input "
                   "order) are left out, as its drop_remainder does; 0: every row")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  c.met->add_flag("--no-cmmd-cache{false}", m.cmmd_cache,
                  "CMMD: compute each side's own kernel term here, neither read from nor kept in the cache folder "
                  "($VECBENCH_CACHE/cmmd-terms/, keyed by the rows' content: a reference's term, hours for a million "
                  "rows, is computed once; docs/metrics.md)");
  c.met->add_flag("--kid", m.kid, "KID of A and B (clean-fid's)");
  c.met->add_flag("--prc", m.prc,
                  "Improved precision and recall (Kynkaanniemi et al.; torch-fidelity's prc): float64 distances; "
                  "with --like torch-fidelity its own float32 ones (torch.cdist on the CPU, in its batches of 10,000 "
                  "rows: up to 400 MB), and how many samples lie within float32 rounding of a ball's edge");
  c.met->add_flag("--prdc", m.prdc, "Density and coverage (Naeem et al.; the prdc package, with its P/R)");
  c.met->add_option("--isc-splits", m.isc_splits, "IS: splits")->capture_default_str()->check(CLI::Range(1, 100000));
  c.met
      ->add_option("--isc-seed", m.isc_seed,
                   "IS: the seed of the rows' shuffle (NumPy RandomState's, as torch-fidelity)")
      ->capture_default_str();
  c.met->add_flag("--no-isc-shuffle{false}", m.isc_shuffle, "IS: split the rows in stored order");
  c.met->add_option("--prc-k", m.prc_k, "Precision/recall: the k-th neighbour's radius")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  c.met->add_option("--prdc-k", m.prdc_k, "Density/coverage: the k-th neighbour's radius")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  c.met->add_option("--kid-subsets", m.kid_subsets, "KID: random subsets")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  c.met->add_option("--kid-subset-size", m.kid_subset_size, "KID: vectors per subset and side")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000000));
  c.met->add_option("--seed", m.seed, "KID: the subsets' random seed")->capture_default_str();
  c.met->add_option("--block-rows", m.row_block, "k-NN: rows of float64 distances computed at a time (x 4096 x 8 B)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c.met->add_option("--json", m.json_out, "Also write every figure, the sides, their fingerprints and warnings here");
  add_fid_model_options(c.met, m.m);
  c.met->add_flag("--allow-mismatch", m.allow_mismatch,
                  "Compare sides whose fingerprints differ (another model, resize or decode): refused by default");
}

}  // namespace cli
}  // namespace vecbench
