#!/usr/bin/env python3
"""Plots gossip-bench results (JSON array on stdin) as an SVG on stdout.

    cargo run --release -p simulations -- gossip-bench --nodes 10,50,100,200 --json \
      | python3 scripts/plot-gossip-bench.py > docs/gossip-bench.svg

Two panels: detection and propagation p50/p99 (seconds), and bytes sent per
node per second, against the number of nodes. No plotting library needed.
"""
import json
import sys

rows = json.load(sys.stdin)
if isinstance(rows, dict):
    rows = [rows]
rows.sort(key=lambda r: r["nodes"])
W, H, M = 760, 300, 50
PANEL = (W - 3 * M) / 2


def scale(values, lo, hi, size):
    span = (hi - lo) or 1.0
    return [size - (v - lo) / span * size for v in values]


def panel(x0, title, series, unit, goal=None):
    out = [f'<g transform="translate({x0},{M})">']
    xs = [r["nodes"] for r in rows]
    ymax = max([max(vals) for _, vals, _ in series] + ([goal] if goal else [])) * 1.15
    px = [i * PANEL / max(len(xs) - 1, 1) for i in range(len(xs))]
    out.append(f'<rect x="0" y="0" width="{PANEL}" height="{H - 2 * M}" fill="none" stroke="#999"/>')
    out.append(f'<text x="{PANEL / 2}" y="-12" text-anchor="middle" font-size="13">{title}</text>')
    for i, x in enumerate(xs):
        out.append(f'<text x="{px[i]}" y="{H - 2 * M + 16}" text-anchor="middle" font-size="11">{x}</text>')
    out.append(f'<text x="{PANEL / 2}" y="{H - 2 * M + 32}" text-anchor="middle" font-size="11">nodes</text>')
    for frac in (0, 0.5, 1):
        v = ymax * frac
        y = (H - 2 * M) * (1 - frac)
        out.append(f'<text x="-6" y="{y + 4}" text-anchor="end" font-size="10">{v:.3g}{unit}</text>')
    if goal:
        gy = scale([goal], 0, ymax, H - 2 * M)[0]
        out.append(f'<line x1="0" x2="{PANEL}" y1="{gy}" y2="{gy}" stroke="#c00" stroke-dasharray="4,3"/>')
        out.append(f'<text x="{PANEL - 4}" y="{gy - 4}" text-anchor="end" font-size="10" fill="#c00">goal at N=100</text>')
    for k, (name, vals, color) in enumerate(series):
        ys = scale(vals, 0, ymax, H - 2 * M)
        pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px, ys))
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"/>')
        for a, b in zip(px, ys):
            out.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{color}"/>')
        out.append(f'<text x="8" y="{16 + 14 * k}" font-size="11" fill="{color}">{name}</text>')
    out.append("</g>")
    return "\n".join(out)


svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif">',
       '<rect width="100%" height="100%" fill="white"/>']
svg.append(panel(M, "time (simulated), default LAN config", [
    ("detect p50", [r["detect_p50_s"] for r in rows], "#1f77b4"),
    ("detect p99", [r["detect_p99_s"] for r in rows], "#0b3c68"),
    ("propagate p50", [r["propagate_p50_s"] for r in rows], "#2ca02c"),
    ("propagate p99", [r["propagate_p99_s"] for r in rows], "#145214"),
], "s", goal=3.0))
svg.append(panel(2 * M + PANEL, "bytes sent per node per second", [
    ("bytes/node/s", [r["bytes_per_node_per_s"] for r in rows], "#d62728"),
], "", goal=2048))
svg.append("</svg>")
print("\n".join(svg))
