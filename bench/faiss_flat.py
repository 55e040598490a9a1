"""FAISS exact-search baseline for bench/search.ts.

Usage: /usr/bin/python3 bench/faiss_flat.py <dataset.f32> <queries.f32> <dim> <k> [--threads 0,1] [--warmup 5]

Both files are raw little-endian float32 matrices with `dim` columns. The dataset goes into a
faiss.IndexFlatIP; every query is searched on its own (index.search(q[i:i+1], k)) after a warm-up, once
per thread setting (0 = OpenMP default, i.e. all cores). Prints one JSON object on stdout: build seconds,
p50/p99 per thread setting, and the top-k ids of every query (from the first thread setting).
"""

import argparse
import json
import platform
import time

import faiss
import numpy as np


def percentile(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("queries")
    ap.add_argument("dim", type=int)
    ap.add_argument("k", type=int)
    ap.add_argument("--threads", default="0")
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()

    d, k = args.dim, args.k
    default_threads = faiss.omp_get_max_threads()

    t = time.perf_counter()
    xb = np.fromfile(args.dataset, dtype="<f4").reshape(-1, d)
    xq = np.fromfile(args.queries, dtype="<f4").reshape(-1, d)
    load_s = time.perf_counter() - t

    t = time.perf_counter()
    index = faiss.IndexFlatIP(d)
    index.add(xb)
    build_s = time.perf_counter() - t
    n = index.ntotal
    del xb

    runs = []
    ids = None
    for threads in [int(x) for x in args.threads.split(",")]:
        faiss.omp_set_num_threads(threads if threads > 0 else default_threads)
        for i in range(min(args.warmup, len(xq))):
            index.search(xq[i : i + 1], k)
        times = []
        run_ids = []
        for i in range(len(xq)):
            q = xq[i : i + 1]
            t = time.perf_counter()
            _, idx = index.search(q, k)
            times.append((time.perf_counter() - t) * 1000)
            run_ids.append([int(x) for x in idx[0]])
        if ids is None:
            ids = run_ids
        runs.append({
            "threads": threads,
            "omp_threads": faiss.omp_get_max_threads(),
            "p50_ms": round(percentile(times, 50), 3),
            "p99_ms": round(percentile(times, 99), 3),
            "mean_ms": round(sum(times) / len(times), 3),
        })
    faiss.omp_set_num_threads(default_threads)

    print(json.dumps({
        "faiss_version": faiss.__version__,
        "faiss_compile_options": faiss.get_compile_options() if hasattr(faiss, "get_compile_options") else None,
        "numpy_version": np.__version__,
        "python": platform.python_version(),
        "omp_default_threads": default_threads,
        "n": n,
        "queries": len(xq),
        "load_s": round(load_s, 3),
        "build_s": round(build_s, 3),
        "runs": runs,
        "ids": ids,
    }))


if __name__ == "__main__":
    main()
