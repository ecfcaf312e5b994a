#!/usr/bin/env python3
"""Make a set of JPEG crops from real photos, deterministically from a seed (never committed).

The FID-sensitivity experiment (tools/fid_sensitivity.py, issue #28) needs more than 2,048 real
images so that a covariance of 2048 features has full rank. Debian ships far fewer photos than
that, so this cuts many crops of different sizes and aspect ratios out of each one:

  apt-get download gnome-backgrounds plasma-workspace-wallpapers mate-backgrounds ukui-wallpapers
  for d in *.deb; do dpkg -x "$d" photos/; done
  /usr/bin/python3 tools/make_photo_crops.py --out crops --count 4200 photos/ \\
      /usr/share/doc/opencv-doc/examples/data

Sources: every .jpg/.jpeg/.png/.webp of at least --min-side pixels on its shorter side below the
given folders, except flat ones (solid or two-tone backgrounds: --min-std); a Plasma wallpaper
shipped at several resolutions or in light and dark variants (NAME/contents/images*/WxH.ext)
counts once, at its largest. The packages hold photos (flowers, grass, landscapes, sea, forest)
and much abstract and drawn art: the set is real pictures, not only photographs. Each crop: a source picked uniformly, a side of 20-100 % of the
source's shorter side, an aspect ratio of 1, 4:3, 3:4, 3:2 or 2:3, scaled down (Lanczos) when its
longer side exceeds --max-side, saved as JPEG quality --quality (4:2:0). Crop i is the same bits
for the same sources, seed and options (Pillow's encoder).

The set is pinned (issue #63): the sources are ordered by name (a file's name; a Plasma wallpaper's
folder and file name), then by content, never by the folder they were unpacked into, and
results/photo-crops/ holds the list of sources and the SHA-256 of every crop of the default
options. A run with those options checks its sources against the list before it writes anything
and its crops against the checksums after: a different set is refused (exit 1), naming what
differs. Other options make another set, said so and not checked. The set's digest (the SHA-256
of crops.sha256, as tools/provenance.py's image_set_record computes it) names it in results files.
"""
import argparse
import hashlib
import json
import os
import random
import sys

from PIL import Image, ImageStat, __version__ as PILLOW

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import checksum_lines, file_sha256  # noqa: E402

PINNED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results", "photo-crops")

EXTS = (".jpg", ".jpeg", ".png", ".webp")
ASPECTS = (1.0, 4 / 3, 3 / 4, 3 / 2, 2 / 3)


def flat(im, min_std):
    """A picture of (nearly) one colour: its grey levels' standard deviation on a 256-pixel
    thumbnail under min_std (solid and two-tone backgrounds, transparent images)."""
    thumb = im.convert("RGB").copy()
    thumb.thumbnail((256, 256))
    return ImageStat.Stat(thumb.convert("L")).stddev[0] < min_std


def source_name(key, path):
    """A source's name: its file name, or for a Plasma wallpaper (key: its folder) FOLDER/FILE."""
    return f"{os.path.basename(key)}/{os.path.basename(path)}" if key != path else os.path.basename(path)


def sources(folders, min_side, min_std):
    """[{name, sha256, width, height, path, found_as}] of the source pictures, one per Plasma wallpaper, each at least
    min_side pixels on its shorter side and not flat; sorted by name, then content (the order the
    crops draw from: it must not depend on where the packages were unpacked)."""
    best = {}  # key -> (pixels, path, w, h, path below its folder)
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            dirs.sort()  # a wallpaper's variants of one size: the first in name order, wherever unpacked
            for f in sorted(files):
                if not f.lower().endswith(EXTS):
                    continue
                path = os.path.join(root, f)
                try:
                    with Image.open(path) as im:
                        w, h = im.size
                        if min(w, h) < min_side or flat(im, min_std):
                            continue
                except OSError as e:
                    print(f"make_photo_crops: skipping {path}: {e}", file=sys.stderr)
                    continue
                # a Plasma wallpaper: NAME/contents/images*/WxH.ext, its light and dark variants one source
                key = root.split(os.sep + "contents" + os.sep)[0] if os.sep + "contents" + os.sep in root else path
                if key not in best or w * h > best[key][0]:
                    best[key] = (w * h, path, w, h, os.path.relpath(path, folder))
    found = [{"name": source_name(k, p), "sha256": file_sha256(p), "width": w, "height": h, "path": p, "found_as": r}
             for k, (_, p, w, h, r) in best.items()]
    return sorted(found, key=lambda s: (s["name"], s["sha256"]))


def crop_box(rng, w, h):
    """(left, top, right, bottom) of one crop of a w x h source."""
    aspect = rng.choice(ASPECTS)
    side = rng.uniform(0.2, 1.0) * min(w, h)
    cw, ch = (side * aspect, side) if aspect >= 1 else (side, side / aspect)
    scale = min(1.0, w / cw, h / ch)
    cw, ch = max(1, int(cw * scale)), max(1, int(ch * scale))
    x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
    return x, y, x + cw, y + ch


def write_crops(plan, out, max_side, quality):
    """Every planned crop, each source decoded once."""
    for path in sorted(plan):
        with Image.open(path) as im:
            im = im.convert("RGB")
            for i, box in plan[path]:
                crop = im.crop(box)
                longer = max(crop.size)
                if longer > max_side:
                    k = max_side / longer
                    crop = crop.resize((max(1, round(crop.size[0] * k)), max(1, round(crop.size[1] * k))), Image.LANCZOS)
                crop.save(os.path.join(out, f"crop_{i:05d}.jpg"), quality=quality, subsampling=2)


def pinned(params):
    """The pinned set's manifest when PARAMS are its options, else None."""
    path = os.path.join(PINNED, "manifest.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        m = json.load(f)
    return m if m["params"] == params else None


def differences(want, got, what):
    """Lines naming how two lists of (name, sha256) differ, at most a few."""
    w, g = dict(want), dict(got)
    out = [f"{what} missing: {n}" for n in w if n not in g] + [f"{what} not in the pinned set: {n}" for n in g if n not in w]
    out += [f"{what} with other contents: {n}" for n in w if n in g and w[n] != g[n]]
    if not out and list(want) != list(got):
        out.append(f"the same {what}s in another order")
    return out[:8] + ([f"... {len(out) - 8} more"] if len(out) > 8 else [])


def write_manifest(params, srcs, crops):
    os.makedirs(PINNED, exist_ok=True)
    with open(os.path.join(PINNED, "crops.sha256"), "w") as f:
        f.write(crops)
    manifest = {"params": params, "pillow": PILLOW, "crops": params["count"],
                "set_sha256": hashlib.sha256(crops.encode()).hexdigest(),
                "sources": [{k: s[k] for k in ("name", "sha256", "width", "height", "found_as")} for s in srcs]}
    with open(os.path.join(PINNED, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+", help="folders searched for source photos")
    ap.add_argument("--out", required=True, help="folder for crop_NNNNN.jpg (created)")
    ap.add_argument("--count", type=int, default=4200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-side", type=int, default=600, help="smallest source shorter side, pixels")
    ap.add_argument("--min-std", type=float, default=10.0,
                    help="skip sources whose grey levels vary less than this (standard deviation, 0-255)")
    ap.add_argument("--max-side", type=int, default=1600, help="largest crop longer side, pixels")
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--write-manifest", action="store_true",
                    help="pin this set: write its sources and crops' checksums into results/photo-crops/")
    a = ap.parse_args()
    params = {k: getattr(a, k) for k in ("count", "seed", "min_side", "min_std", "max_side", "quality")}
    srcs = sources(a.folders, a.min_side, a.min_std)
    if not srcs:
        sys.exit(f"make_photo_crops: no photo of at least {a.min_side} pixels below {', '.join(a.folders)}")
    pin = None if a.write_manifest else pinned(params)
    if pin:
        diff = differences([(s["name"], s["sha256"]) for s in pin["sources"]], [(s["name"], s["sha256"]) for s in srcs],
                           "source")
        if diff:
            sys.exit("make_photo_crops: refused: these sources are not the pinned set's (results/photo-crops/"
                     "manifest.json: Debian 12's gnome-backgrounds, plasma-workspace-wallpapers, mate-backgrounds, "
                     "ukui-wallpapers, unpacked, and opencv-doc's examples/data):\n  " + "\n  ".join(diff))
    if os.path.isdir(a.out) and os.listdir(a.out):
        sys.exit(f"make_photo_crops: refused: {a.out} is not empty (the set is every file in it)")
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    plan = {}  # source -> [(i, box)]: every crop drawn first, then written source by source
    for i in range(a.count):
        s = rng.choice(srcs)
        plan.setdefault(s["path"], []).append((i, crop_box(rng, s["width"], s["height"])))
    write_crops(plan, a.out, a.max_side, a.quality)
    crops = checksum_lines(a.out)
    digest = hashlib.sha256(crops.encode()).hexdigest()
    print(f"make_photo_crops: {a.count} crops of {len(srcs)} photos -> {a.out}; the set's SHA-256 {digest}")
    if a.write_manifest:
        write_manifest(params, srcs, crops)
        print("make_photo_crops: pinned in results/photo-crops/ (manifest.json, crops.sha256)")
    elif not pin:
        print("make_photo_crops: not the pinned set (its options differ from results/photo-crops/manifest.json): "
              "results name it by the digest above")
    else:
        with open(os.path.join(PINNED, "crops.sha256")) as f:
            want = f.read()
        if crops == want:
            print("make_photo_crops: the pinned set (results/photo-crops/crops.sha256): every crop the same bits")
            return
        pairs = lambda text: [tuple(l.split("  ", 1)[::-1]) for l in text.splitlines()]
        diff = differences(pairs(want), pairs(crops), "crop")
        sys.exit(f"make_photo_crops: the crops differ from the pinned set (Pillow {PILLOW} here, "
                 f"{pin['pillow']} made it):\n  " + "\n  ".join(diff))


if __name__ == "__main__":
    main()
