"""results/ci/header-moves-20261207.py ROOT OUT.json: user CPU seconds of each translation unit of /work/main/build
 that includes the moved headers, compiled against the tree at ROOT (see the .md beside it)."""
import json, os, shlex, subprocess, sys, resource
root = sys.argv[1]; out = sys.argv[2]
build = '/work/main/build'
cc = json.load(open(f'{build}/compile_commands.json'))
heads = ['dist/merge_manifests.hpp', 'dist/merge_results.hpp', 'experiment/experiment.hpp']
# TUs whose dep files name any of the headers (current build)
tus = []
for e in cc:
    obj = None
    args = shlex.split(e['command'])
    if '-o' in args: obj = args[args.index('-o') + 1]
    d = os.path.join(e['directory'], obj + '.d') if obj else None
    deps = open(d).read() if d and os.path.exists(d) else ''
    new = any(e['file'].endswith(n) for n in ['src/dist/merge_manifests.cpp', 'src/dist/merge_results.cpp', 'src/experiment/experiment.cpp'])
    if new or any(h in deps for h in heads):
        tus.append(e)
res = {}
for e in tus:
    f = e['file'].replace('/work/main/', root + '/') if e['file'].startswith('/work/main/src') or e['file'].startswith('/work/main/tests') else e['file']
    if not os.path.exists(f):
        continue
    args = shlex.split(e['command'])
    args = [a for a in args if 'ccache' not in a]
    a2, skip = [], False
    for a in args:
        if skip: skip = False; continue
        if a in ('-o', '-c'): skip = True; continue
        a = '-I' + root if a == '-I/work/main' else a
        a2.append(a.replace('-I/work/main/', '-I' + root + '/').replace('/work/main/include', root + '/include'))
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    p = subprocess.run(a2 + ['-c', f, '-o', '/tmp/measure.o'], cwd=e['directory'], capture_output=True, text=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    res[os.path.relpath(e['file'], '/work/main')] = (round(r1 - r0, 2), p.returncode)
json.dump(res, open(out, 'w'), indent=1)
print(len(res), round(sum(v[0] for v in res.values()), 1))
