# Draws docs/images/layers.svg from the layers declared in lib/CMakeLists.txt (one row per level).
import re, sys
src = open(sys.argv[1] if len(sys.argv) > 1 else 'lib/CMakeLists.txt').read()
deps = {}
for m in re.finditer(r'^set\(MASR_LAYER_(\w+)\s*([^)]*)\)', src, re.M):
    name, rest = m.group(1), m.group(2).split('#')[0]
    items = []
    for tok in rest.split():
        mm = re.match(r'\$\{MASR_LAYER_(\w+)\}', tok)
        items += deps[mm.group(1)] if mm else [tok]
    deps[name] = sorted(set(items))
level = {}
def lv(n):
    if n not in level: level[n] = 0 if not deps[n] else 1 + max(lv(d) for d in deps[n])
    return level[n]
for n in deps: lv(n)
rows = {}
for n, l in level.items(): rows.setdefault(l, []).append(n)
desc = {'core':'errors, log, version','hparams':'YAML engine, registry','runtime':'device, threads, machine,\nbenchmark protocol, autocast',
        'audio':'read, resample','ops':'scan, CTC kernels','data':'manifests, loader','features':'Fbank, norm, augment','nn':'layers',
        'text':'tokenizer, WER','models':'encoders, decoders,\nASR and LM models','decode':'searches, scorers,\nfile transcriber, streaming','train':'one training loop',
        'toolkit':'class registration, benchmarks,\ntuner, profiles, plans'}
W, BH, BW, GAP = 900, 58, 190, 18
nrows = max(rows) + 1
H = nrows * (BH + 34) + 84
pos = {}
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Arial, sans-serif">',
       '<rect width="100%" height="100%" fill="white"/>',
       f'<text x="{W/2}" y="26" text-anchor="middle" font-size="17" font-weight="bold">mamba-asr library layers (lib/): a folder includes only folders below it</text>',
       '<defs><marker id="a" markerWidth="8" markerHeight="8" refX="7" refY="4" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#888"/></marker></defs>']
for l in range(nrows):
    names = sorted(rows[l])
    y = H - 44 - (l + 1) * (BH + 34) + 34
    total = len(names) * BW + (len(names) - 1) * GAP
    x0 = (W - total) / 2
    for i, n in enumerate(names):
        pos[n] = (x0 + i * (BW + GAP), y)
# A lone folder whose users also reach past it sits to the side, so those arrows stay visible.
for n in pos:
    if len(rows[level[n]]) == 1 and any(n in deps[m] and any(d != n and level[d] < level[n] for d in deps[m] if d not in deps[n]) for m in deps):
        pos[n] = (pos[n][0] - BW - GAP, pos[n][1])
# edges: only to the direct lower level(s) for readability (transitive ones are implied)
for n, ds in deps.items():
    direct = [d for d in ds if not any(d in deps[e] for e in ds if e != d)]
    for d in direct:
        (x1, y1), (x2, y2) = pos[n], pos[d]
        out.append(f'<line x1="{x1+BW/2}" y1="{y1+BH}" x2="{x2+BW/2}" y2="{y2}" stroke="#aaa" stroke-width="1.2" marker-end="url(#a)"/>')
colors = ['#e8eef7', '#dde8f5', '#e6f2e6', '#fdf2dc', '#f8e4e4', '#eee4f5', '#e4f4f4', '#f3f3dd']
for n, (x, y) in pos.items():
    c = colors[level[n] % len(colors)]
    base = n in ('core', 'hparams')
    out.append(f'<rect x="{x}" y="{y}" width="{BW}" height="{BH}" rx="7" fill="{c}" stroke="{"#555" if base else "#7a8aa0"}" stroke-width="{1.6 if base else 1.2}"/>')
    out.append(f'<text x="{x+BW/2}" y="{y+19}" text-anchor="middle" font-size="14" font-weight="bold">{n}/</text>')
    for k, line in enumerate(desc.get(n, '').split('\n')):
        out.append(f'<text x="{x+BW/2}" y="{y+35+k*13}" text-anchor="middle" font-size="10.5" fill="#333">{line}</text>')
out.append(f'<text x="{W/2}" y="{H-22}" text-anchor="middle" font-size="11" fill="#555">Arrows: the layers each folder uses directly; it may include everything they reach. core/ and hparams/ are masr_base (no LibTorch).</text>')
out.append(f'<text x="{W/2}" y="{H-8}" text-anchor="middle" font-size="11" fill="#555">Drawn by docs/images/layers_svg.py from the layers declared in lib/CMakeLists.txt; cmake/check_layers.cmake enforces them.</text>')
out.append('</svg>')
open(sys.argv[2] if len(sys.argv) > 2 else 'docs/images/layers.svg', 'w').write('\n'.join(out) + '\n')
print({l: sorted(r) for l, r in sorted(rows.items())})
