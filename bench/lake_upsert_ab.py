"""A B A B of ribbon's concentrated delete (10^4 ids of the 10 newest files) between two
checkouts of the Python package, each run in its own process on a fresh copy of the table
that `bench/lake_upsert_bench.py --make-only` left in DIR; prints every run and the medians.

  python bench/lake_upsert_ab.py DIR FILES ROWS ROUNDS old=/path/a/python new=/path/b/python
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from lake_upsert_bench import catalog_of  # noqa: E402


def main():
    directory, files, rows, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    versions = dict(v.split("=", 1) for v in sys.argv[5:])  # name=python_dir
    catalog = catalog_of(directory)
    base = catalog.load_table("db.events")
    ids = np.load(os.path.join(directory, f"ids-{files}x{rows}.npy"))
    newest = ids[(files - 10) * rows:]
    batch = pa.table({"id": np.random.default_rng(7).choice(newest, 10000, replace=False)})
    batch_path = os.path.join(directory, "ab_batch.parquet")
    pq.write_table(batch, batch_path)
    times = {v: [] for v in versions}
    for r in range(rounds):
        for n, (version, python_dir) in enumerate(versions.items()):
            name = f"db.ab{os.getpid()}_{r}_{n}"
            catalog.register_table(name, base.metadata_location)
            done = subprocess.run(
                [sys.executable, os.path.join(HERE, "lake_upsert_bench.py"), "--run", "ribbon",
                 "--table", name, "--batch", batch_path, "--op", "delete", "--dir", directory],
                capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=python_dir))
            catalog.drop_table(name)
            if done.returncode:
                sys.exit(f"{version} failed:\n{done.stderr[-3000:]}")
            record = json.loads(done.stdout.strip().splitlines()[-1])
            times[version].append(record["seconds"])
            print(version, r, round(record["seconds"], 3), record["result"], flush=True)
    medians = {v: statistics.median(t) for v, t in times.items()}
    print("medians", json.dumps(medians))
    if len(medians) == 2:
        a, b = medians
        print(f"ratio {b}/{a} = {medians[b] / medians[a]:.3f}")


if __name__ == "__main__":
    main()
