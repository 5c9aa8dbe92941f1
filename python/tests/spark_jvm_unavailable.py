"""Run by test_spark_jvm_errors.py in a process of its own (a JVM holds one Spark context):
a local session whose class path lacks ribbon's Spark classes, and what ribbon says of it.

    python spark_jvm_unavailable.py KEYS.u64 OUT_DIR [JAR]

JAR (optional): a ribbon.jar started with (spark.jars); without it the session has none.
Builds OUT_DIR/auto.ribbon with engine="auto" twice (the second into auto2.ribbon), tries
engine="jvm" into OUT_DIR/jvm.ribbon, and register(). Prints one JSON line: jvm_problem's
text, the auto builds' routes, the RibbonJvmWarning messages, and the errors of engine="jvm" and register.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

import numpy as np


def error_of(call) -> dict:
    try:
        call()
    except Exception as e:  # reported to the test, which checks the type and text
        return {"type": type(e).__name__, "message": str(e)}
    return {"type": None, "message": ""}


def main() -> None:
    keys_path, out_dir = sys.argv[1], sys.argv[2]
    jar = sys.argv[3] if len(sys.argv) > 3 else None
    from pyspark.sql import SparkSession

    import ribbon.spark
    import ribbon.spark_jvm

    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    if jar:
        builder = builder.config("spark.jars", jar)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    keys = np.fromfile(keys_path, dtype="<u8").view(np.int64)
    df = spark.createDataFrame([(int(k),) for k in keys], "k bigint").repartition(2)
    report = {"problem": ribbon.spark_jvm.jvm_problem(spark, routing=True)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report["routes"] = [
            ribbon.spark.build(df, "k", os.path.join(out_dir, name + ".ribbon"), engine="auto").layer0_route
            for name in ("auto", "auto2")
        ]
    report["warnings"] = [
        str(w.message) for w in caught if issubclass(w.category, ribbon.spark_jvm.RibbonJvmWarning)
    ]
    jvm_out = os.path.join(out_dir, "jvm.ribbon")
    report["jvm_build"] = error_of(lambda: ribbon.spark.build(df, "k", jvm_out, engine="jvm"))
    report["register"] = error_of(lambda: ribbon.spark_jvm.register(spark))
    spark.stop()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
