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
"""
import argparse
import os
import random
import sys

from PIL import Image, ImageStat

EXTS = (".jpg", ".jpeg", ".png", ".webp")
ASPECTS = (1.0, 4 / 3, 3 / 4, 3 / 2, 2 / 3)


def flat(im, min_std):
    """A picture of (nearly) one colour: its grey levels' standard deviation on a 256-pixel
    thumbnail under min_std (solid and two-tone backgrounds, transparent images)."""
    thumb = im.convert("RGB").copy()
    thumb.thumbnail((256, 256))
    return ImageStat.Stat(thumb.convert("L")).stddev[0] < min_std


def sources(folders, min_side, min_std):
    """Sorted (path, width, height) of the source pictures: one per Plasma wallpaper, each at least
    min_side pixels on its shorter side and not flat."""
    best = {}  # key -> (pixels, path, w, h)
    for folder in folders:
        for root, _, files in os.walk(folder):
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
                    best[key] = (w * h, path, w, h)
    return sorted((p, w, h) for _, p, w, h in best.values())


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
    a = ap.parse_args()
    srcs = sources(a.folders, a.min_side, a.min_std)
    if not srcs:
        sys.exit(f"make_photo_crops: no photo of at least {a.min_side} pixels below {', '.join(a.folders)}")
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    plan = {}  # source -> [(i, box)]: every crop drawn first, then written source by source
    for i in range(a.count):
        path, w, h = rng.choice(srcs)
        plan.setdefault(path, []).append((i, crop_box(rng, w, h)))
    write_crops(plan, a.out, a.max_side, a.quality)
    print(f"make_photo_crops: {a.count} crops of {len(srcs)} photos -> {a.out}")


if __name__ == "__main__":
    main()
