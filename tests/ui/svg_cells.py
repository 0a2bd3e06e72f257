"""Compare two snapshot SVGs (Rich's export) cell by cell: the character and its text style,
and the background of every cell. For reviewing a snapshot whose SVG text changed only in
how cells are grouped into <text> runs (the segments drawn were split differently).
A blank's text style is not compared: it shows nothing but its background.

    python tests/ui/svg_cells.py OLD.svg NEW.svg   (`git show HEAD:path > OLD.svg` for the old)

prints the differing cells and the rows they are in, or "same"; exits 1 on a difference."""
import html, re, sys

CW, LH = 12.2, 24.4

def cells(path):
    s = open(path).read()
    styles = dict(re.findall(r'\.terminal-(?:[0-9a-z]+-)?(r\d+) \{ ([^}]*) \}', s))
    bg, fg = {}, {}
    # backgrounds: rects with fill inside the clip group
    for m in re.finditer(r'<rect fill="(#[0-9a-f]+)" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', s):
        fill, x, y, w, h = m.groups()
        c0, n, row = round(float(x) / CW), round(float(w) / CW), round((float(y) - 1.5) / LH)
        for c in range(c0, c0 + n):
            bg[(row, c)] = fill
    for m in re.finditer(r'<text class="terminal-(?:[0-9a-z]+-)?(r\d+)" x="([\d.]+)" y="([\d.]+)" textLength="([\d.]+)" clip-path="url\(#terminal-(?:[0-9a-z]+-)?line-(\d+)\)">([^<]*)</text>', s):
        cls, x, y, tl, line, text = m.groups()
        text = html.unescape(text)
        c0 = round(float(x) / CW)
        for i, ch in enumerate(text):
            if ch.isspace() and "underline" not in styles[cls] and "line-through" not in styles[cls]:
                continue  # a blank shows no foreground: only its background (checked above) is seen
            fg[(int(line), c0 + i)] = (ch, styles[cls])
    return bg, fg

def row_text(fg, row, width=120):
    return "".join(fg.get((row, c), (" ",))[0] for c in range(width))

def main(a, b):
    bga, fga = cells(a)
    bgb, fgb = cells(b)
    diffs = []
    for key in sorted(set(bga) | set(bgb)):
        if bga.get(key) != bgb.get(key):
            diffs.append(("bg", key, bga.get(key), bgb.get(key)))
    for key in sorted(set(fga) | set(fgb)):
        if fga.get(key) != fgb.get(key):
            diffs.append(("fg", key, fga.get(key), fgb.get(key)))
    print(f"{a}: {len(bga)} background cells, {len(fga)} text cells")
    for d in diffs[:40]:
        print(d)
    for row in sorted({d[1][0] for d in diffs}):
        print("old", row, repr(row_text(fga, row)))
        print("new", row, repr(row_text(fgb, row)))
    print("same" if not diffs else f"{len(diffs)} differing cells")
    return 1 if diffs else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
