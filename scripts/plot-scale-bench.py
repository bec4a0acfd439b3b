#!/usr/bin/env python3
"""Plots scale-bench results (the JSON array of `simulations scale-bench
--json`, on stdin) as an SVG on stdout.

    ./target/release/simulations scale-bench --json > target/scale.json
    python3 scripts/plot-scale-bench.py < target/scale.json > docs/scale-bench.svg

Three panels against the database size (GiB): seconds (medians) of eco and
of the tool a user runs by hand; eco's time over the tool's with the goals;
eco's peak RSS with its goal. No plotting library needed.
"""
import json
import sys

rows = json.load(sys.stdin)
if isinstance(rows, dict):
    rows = [rows]
rows.sort(key=lambda r: r["db_mib"])
W, H, M = 1080, 320, 60
PANEL = (W - 4 * M) / 3
PH = H - 2 * M


def get(row, *path):
    for p in path:
        if row is None:
            return None
        row = row.get(p)
    return row


def panel(x0, title, series, unit, goals=()):
    out = [f'<g transform="translate({x0},{M})">']
    xs = [r["db_mib"] / 1024 for r in rows]
    values = [v for _, vals, _ in series for v in vals if v is not None]
    ymax = max(values + [g for g, _ in goals] + [1e-9]) * 1.15
    xmax = max(xs) * 1.05 if xs else 1
    px = lambda x: x / xmax * PANEL
    py = lambda y: PH - y / ymax * PH
    out.append(f'<rect x="0" y="0" width="{PANEL}" height="{PH}" fill="none" stroke="#999"/>')
    out.append(f'<text x="{PANEL / 2}" y="-12" text-anchor="middle" font-size="13">{title}</text>')
    for x in xs:
        out.append(f'<text x="{px(x):.1f}" y="{PH + 16}" text-anchor="middle" font-size="11">{x:.1f}</text>')
    out.append(f'<text x="{PANEL / 2}" y="{PH + 32}" text-anchor="middle" font-size="11">database, GiB</text>')
    for frac in (0, 0.5, 1):
        v = ymax * frac
        out.append(f'<text x="-6" y="{py(v) + 4:.1f}" text-anchor="end" font-size="10">{v:.3g}{unit}</text>')
    for g, label in goals:
        out.append(f'<line x1="0" x2="{PANEL}" y1="{py(g):.1f}" y2="{py(g):.1f}" stroke="#c00" stroke-dasharray="4,3"/>')
        out.append(f'<text x="{PANEL - 4}" y="{py(g) - 4:.1f}" text-anchor="end" font-size="10" fill="#c00">{label}</text>')
    for k, (name, vals, color) in enumerate(series):
        pts = [(px(x), py(v)) for x, v in zip(xs, vals) if v is not None]
        if len(pts) > 1:
            line = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
            out.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="2"/>')
        for a, b in pts:
            out.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{color}"/>')
        out.append(f'<text x="8" y="{16 + 14 * k}" font-size="11" fill="{color}">{name}</text>')
    out.append("</g>")
    return "\n".join(out)


def col(*path):
    return [get(r, *path) for r in rows]


svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif">',
       '<rect width="100%" height="100%" fill="white"/>']
svg.append(panel(M, "seconds (medians)", [
    ("eco snapshot → dir (zstd)", col("snapshot_dir", "eco_median_s"), "#1f77b4"),
    ("etcdctl snapshot save", col("snapshot_dir", "etcdctl_median_s"), "#7fb2d9"),
    ("eco snapshot → S3", col("snapshot_s3", "eco_median_s"), "#2ca02c"),
    ("etcdctl + aws s3 cp", col("snapshot_s3", "manual_median_s"), "#98d98e"),
    ("eco restore", col("restore", "eco_median_s"), "#d62728"),
    ("etcdutl snapshot restore", col("restore", "etcdutl_median_s"), "#ff9896"),
    ("eco snapshot import (the check)", col("restore", "check_median_s"), "#9467bd"),
], " s"))
svg.append(panel(2 * M + PANEL, "eco's time / the tool's", [
    ("snapshot → dir / etcdctl", col("snapshot_dir", "time_ratio_vs_etcdctl"), "#1f77b4"),
    ("snapshot → S3 / etcdctl + aws", col("snapshot_s3", "time_ratio_vs_manual"), "#2ca02c"),
    ("restore / etcdutl", col("restore", "time_ratio_vs_etcdutl"), "#d62728"),
], "", goals=[(1.0, "snapshot goal 1.0"), (1.1, "restore goal 1.1")]))
svg.append(panel(3 * M + 2 * PANEL, "eco's peak RSS", [
    ("snapshot → dir", col("snapshot_dir", "peak_rss_mib"), "#1f77b4"),
    ("snapshot → S3", col("snapshot_s3", "peak_rss_mib"), "#2ca02c"),
], " MiB", goals=[(64.0, "goal 64 MiB")]))
svg.append("</svg>")
print("\n".join(svg))
