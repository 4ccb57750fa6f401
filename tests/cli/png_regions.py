#!/usr/bin/env python3
"""Checks that regions of a PNG screenshot are not blank, with the standard
library only (zlib; no PIL).

usage: png_regions.py SHOT.png RECTS_JSON [NAME ...]
RECTS_JSON: {"name": [x, y, w, h], ...} in CSS pixels (device scale 1).
A region passes when at least 3% of its pixels differ from its most common
colour and it holds at least 3 distinct colours. Prints one line per region.
"""
import json
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if ctype == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, "unsupported PNG"
            bpp = 3 if color == 2 else 4
        elif ctype == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    width, height, bpp, rows = read_png(sys.argv[1])
    rects = json.loads(open(sys.argv[2]).read())
    names = sys.argv[3:] or list(rects)
    failed = 0
    for name in names:
        if name not in rects:
            print(f"{name}: not on the page")
            failed += 1
            continue
        x, y, w, h = rects[name]
        x0, y0 = max(0, x), max(0, y)
        x1, y1 = min(width, x + w), min(height, y + h)
        if x1 <= x0 or y1 <= y0:
            print(f"{name}: outside the screenshot ({x},{y},{w},{h} vs {width}x{height})")
            failed += 1
            continue
        counts = {}
        for yy in range(y0, y1, 2):
            row = rows[yy]
            for xx in range(x0, x1, 2):
                px = row[xx * bpp:xx * bpp + 3]
                counts[px] = counts.get(px, 0) + 1
        total = sum(counts.values())
        top = max(counts.values())
        ink = 1 - top / total
        ok = ink >= 0.03 and len(counts) >= 3
        failed += not ok
        print(f"{name}: {'ok' if ok else 'BLANK'} ({ink * 100:.1f}% non-background, "
              f"{len(counts)} colours, {x1 - x0}x{y1 - y0} px)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
