"""What onboarding runs on a node to check it, as Python sources: a sample job, a failing one, a model against its
reference; and how far a model's answer is from the reference (a framework's versions: onboarding_frameworks.py).

    SAMPLE                            # a matrix multiplication with the node's device variables; "hetero-sample ok"
    MODEL_HARNESS.format(code=..., inputs=[...], repeats=20)   # prints "hetero-model {outputs, p95_ms, peak_mib}"
    difference([2.1, 6], [2, 6])      # 0.1 (up to float rounding)
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["FAULT", "FRAMEWORK_MODULES", "MODEL_HARNESS", "SAMPLE", "difference"]

SAMPLE = """
import os, shutil, subprocess, sys
import numpy
a = numpy.random.default_rng(7).random((256, 256))
product = a @ a.T
print("hetero-sample matmul", product.shape, round(float(product.trace()), 3))
for name in ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
    if os.environ.get(name):
        print("hetero-sample", name, os.environ[name])
if os.environ.get("HETERO_EMULATED") != "1" and shutil.which("nvidia-smi"):
    print(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=60).stdout.strip())
print("hetero-sample ok")
"""
FAULT = "print('hetero-fault-sample: exiting 3 on purpose'); import sys; sys.exit(3)"
# Runs a catalog model against its reference on a node: one JSON line of what it measured.
MODEL_HARNESS = """
import json, resource, sys, time
namespace = {{}}
exec(compile({code!r}, "model", "exec"), namespace)
predict = namespace["predict"]
outputs, latencies = [], []
for value in {inputs!r}:
    for _ in range({repeats}):
        started = time.perf_counter()
        answer = predict(value)
        latencies.append((time.perf_counter() - started) * 1000)
    outputs.append(answer)
latencies.sort()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("hetero-model " + json.dumps({{"outputs": outputs, "p95_ms": latencies[max(0, -(-95 * len(latencies) // 100) - 1)],
                                     "peak_mib": peak}}))
"""
# A framework's name in the catalog -> the module that imports it.
FRAMEWORK_MODULES = {"pytorch": "torch", "tensorflow": "tensorflow", "paddlepaddle": "paddle", "scikit-learn": "sklearn",
                     "tensorrt-llm": "tensorrt_llm", "megatron": "megatron"}


def difference(got: Any, want: Any) -> float:
    """The largest absolute difference between two answers, number by number (inf where their shapes differ)."""
    if isinstance(want, (int, float)) and not isinstance(want, bool) and isinstance(got, (int, float)):
        return abs(float(got) - float(want))
    if isinstance(want, list) and isinstance(got, list) and len(got) == len(want):
        return max((difference(g, w) for g, w in zip(got, want, strict=True)), default=0.0)
    if isinstance(want, dict) and isinstance(got, dict) and got.keys() == want.keys():
        return max((difference(got[k], want[k]) for k in want), default=0.0)
    return 0.0 if got == want else math.inf
