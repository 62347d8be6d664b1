#!/usr/bin/env python3
"""bench/dist_model.py: projects a distributed cask-knn run to 1..64 nodes from
per-link costs, with the plan cask's distributed layer makes (docs/distributed.md).

    python3 bench/dist_model.py [--rate 5.3e12] [--alpha-us 5] [--beta-gbs 24] ...

The model, per compute (one GPU per node, P nodes):
  observations are already split (each rank owns N/P rows), references (M rows) are
  owned by rank 0 and sent to every other rank at exchange 0, one after the other
  (cask sends from the holder of the version, no tree yet):
      t_refs   = (P-1) * (alpha + ref_bytes / beta)
  phase 0 searches the local rows against all references:
      t_comp   = N * M / (P * rate)
  the final exchange gathers the results (int32 index + float32 distance per row) to
  rank 0, whose link receives all of them:
      t_gather = (P-1)/P * N * 8 / beta + (P-1) * alpha
  the end-of-run agreement: every rank sends P-1 DONE messages and waits for P-1:
      t_done   = (P-1) * alpha_msg + alpha
  the plan agreement (first compute only) costs the same as t_done.
Without the gather (results left on their owners) t_gather is 0.

Inputs: rate is cask-knn's measured pairs/s on one H100 (docs/knn.md); alpha_msg is
the measured software cost of one small cask message (bench-xport, 'cask api', half a
round trip); beta and alpha (wire latency) are those of the fabric, assumed (no
multi-node machine measured here): HDR InfiniBand 200 Gb/s ~ 24 GB/s, ~2 us.
Prints a table and one JSON object per P.
"""
import argparse
import json


def project(p, a):
    ref_bytes = a.m * 16            # float64 latitude/longitude
    alpha = (a.alpha_us + a.alpha_msg_us) * 1e-6
    beta = a.beta_gbs * 1e9
    t_refs = (p - 1) * (alpha + ref_bytes / beta)
    t_comp = a.n * a.m / (p * a.rate)
    t_gather = ((p - 1) / p * a.n * 8 / beta + (p - 1) * alpha) if a.gather else 0.0
    t_done = (p - 1) * a.alpha_msg_us * 1e-6 + alpha if p > 1 else 0.0
    total = t_refs + t_comp + t_gather + t_done
    return dict(nodes=p, t_refs_ms=t_refs * 1e3, t_comp_ms=t_comp * 1e3,
                t_gather_ms=t_gather * 1e3, t_done_ms=t_done * 1e3, total_ms=total * 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=float, default=2 ** 24, help="observations")
    ap.add_argument("--m", type=float, default=2 ** 14, help="references")
    ap.add_argument("--rate", type=float, default=5.3e12, help="pairs/s of one GPU")
    ap.add_argument("--alpha-us", type=float, default=2.0, help="wire latency, us")
    ap.add_argument("--alpha-msg-us", type=float, default=5.0,
                    help="software cost of one cask message, us")
    ap.add_argument("--beta-gbs", type=float, default=24.0, help="link bandwidth, GB/s")
    ap.add_argument("--no-gather", dest="gather", action="store_false",
                    help="results stay on their owners")
    ap.add_argument("--nodes", default="1,2,4,8,16,32,64")
    a = ap.parse_args()
    rows = [project(int(p), a) for p in a.nodes.split(",")]
    base = rows[0]["total_ms"]
    print(f"N={a.n:.0f} M={a.m:.0f} rate={a.rate:.3g} pairs/s/GPU, alpha={a.alpha_us}+"
          f"{a.alpha_msg_us} us, beta={a.beta_gbs} GB/s, gather={'yes' if a.gather else 'no'}")
    print(f"{'nodes':>5} {'refs ms':>9} {'compute ms':>11} {'gather ms':>10} {'done ms':>8} "
          f"{'total ms':>9} {'speedup':>8} {'efficiency':>10}")
    for r in rows:
        s = base / r["total_ms"]
        print(f"{r['nodes']:>5} {r['t_refs_ms']:>9.3f} {r['t_comp_ms']:>11.3f} "
              f"{r['t_gather_ms']:>10.3f} {r['t_done_ms']:>8.3f} {r['total_ms']:>9.3f} "
              f"{s:>8.2f} {s / r['nodes']:>10.2f}")
    for r in rows:
        r["bench"] = "dist_model"
        r["gather"] = a.gather
        print(json.dumps(r))


if __name__ == "__main__":
    main()
