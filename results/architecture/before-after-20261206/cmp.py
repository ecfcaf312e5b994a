import json, numpy as np, sys
for r in ['fp32','bf16','int8']:
    res=[]
    for side in ['before','after']:
        d=f'{side}-{r}'; rows={}
        arr=np.load(f'{d}/shard-00000.npy')
        for l in open(f'{d}/manifest.jsonl'):
            j=json.loads(l); rows[j['input']]=arr[j['row']]
        res.append(rows)
    a,b=res
    same=sum(np.array_equal(a[k],b[k]) for k in a)
    md=max(float(np.abs(a[k]-b[k]).max()) for k in a)
    print(r, 'identical vectors per input:', same, 'of', len(a), 'max abs diff', md)
