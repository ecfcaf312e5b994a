#!/bin/bash
# A/B of the int8/bf16 poolings (results/int8/own-pooling-20261204.md): OLD binary (9686082's code: oneDNN's poolings and
# reorders) vs NEW (vecbench's kernels), 9 interleaved rounds of first-layer-20261203.sh's commands; prints
# "round precision binary model IMG_PER_S whole_s SECONDS"
ROUNDS=${ROUNDS:-9} exec "$(dirname "$0")/first-layer-20261203.sh"
