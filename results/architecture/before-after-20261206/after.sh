#!/bin/bash
# vectorize the 100 photos with the new binary and compare with the old binary's stores
cd /work/ba
A=/work/main/build/vecbench
for r in fp32 bf16 int8; do
  extra=""; [ $r = bf16 ] && extra="--precision bf16"; [ $r = int8 ] && extra="--precision int8 --calibration calib.json"
  rm -rf after-$r; $A vectorize --images photos --out after-$r --format shards $extra > after-$r.log 2>&1; echo "$r rc=$?"
  cmp before-$r/shard-00000.npy after-$r/shard-00000.npy && echo "$r shards identical"
  python3 - $r <<'PY'
import json,sys
r=sys.argv[1]
a=json.load(open(f'before-{r}/vecbench.json')); b=json.load(open(f'after-{r}/vecbench.json'))
print(r, 'fingerprint', 'same' if a['fingerprint']==b['fingerprint'] and a['fingerprint_id']==b['fingerprint_id'] else 'DIFFERENT', a['fingerprint_id'], a['fingerprint']['arithmetic'])
la=[json.loads(l) for l in open(f'before-{r}/manifest.jsonl')]; lb=[json.loads(l) for l in open(f'after-{r}/manifest.jsonl')]
print(r, 'manifest xxh3 same:', [x['xxh3'] for x in la]==[x['xxh3'] for x in lb], len(la))
PY
done
