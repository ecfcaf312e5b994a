"""vecbench's Inception-v3 export (tools/export_inception.py is its command line).

Modules: common (constants, errors, hashes), arch (the tf2015 and torchvision networks as
pool-feature modules), bn (the one batch-norm folding routine), protobuf (a GraphDef Const
reader), weights (--weights, --from-tf, --seed), fused (--fuse prepacked), cli (export, main)."""
