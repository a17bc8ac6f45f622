#!/usr/bin/env python3
"""Renders the OCR spec's images: one PNG of printed text per line of
datasets/ocr_lines/texts.txt (`<lang>\t<text>`), in turn in six fonts and
three sizes, with a little seeded noise, and writes
datasets/ocr_lines/lines.jsonl (one instance per image: id, lang, text,
image, font, size).

Needs Pillow and the DejaVu and Liberation fonts (Debian's fonts-dejavu-core
and fonts-liberation). The output is committed, so specs and tests never run
this; rerunning it with the same fonts gives the same images.

    python3 scripts/render_ocr_lines.py
"""
import json
import pathlib
import random

from PIL import Image, ImageDraw, ImageFilter, ImageFont

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIR = ROOT / "datasets" / "ocr_lines"
FONTS = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationMono-Regular.ttf",
]
SIZES = [15, 20, 28]
SEED = 2026


def render(text, font_path, size, rng):
    """One line of dark text on light paper, with speckles and a slight blur."""
    font = ImageFont.truetype(font_path, size)
    left, top, right, bottom = font.getbbox(text)
    margin = size // 2
    width, height = right - left + 2 * margin, bottom - top + 2 * margin
    paper = rng.randint(225, 250)
    image = Image.new("L", (width, height), paper)
    draw = ImageDraw.Draw(image)
    draw.text((margin - left, margin - top), text, fill=rng.randint(10, 50), font=font)
    pixels = image.load()
    for _ in range(width * height // 40):
        x, y = rng.randrange(width), rng.randrange(height)
        pixels[x, y] = max(0, min(255, pixels[x, y] + rng.choice([-90, -60, 60])))
    return image.filter(ImageFilter.GaussianBlur(radius=0.6))


def main():
    rng = random.Random(SEED)
    lines = [l.split("\t", 1) for l in (DIR / "texts.txt").read_text(encoding="utf-8").splitlines() if l]
    (DIR / "images").mkdir(exist_ok=True)
    out = []
    for i, (lang, text) in enumerate(lines):
        font, size = FONTS[i % len(FONTS)], SIZES[(i // len(FONTS)) % len(SIZES)]
        name = "%s_%02d.png" % (lang, i)
        render(text, font, size, rng).save(DIR / "images" / name, optimize=True)
        out.append({"id": "%s_%02d" % (lang, i), "lang": lang, "text": text,
                    "image": "images/" + name, "font": pathlib.Path(font).stem, "size": size})
    with open(DIR / "lines.jsonl", "w", encoding="utf-8") as f:
        for row in out:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print("%d images in %s" % (len(out), DIR / "images"))


if __name__ == "__main__":
    main()
