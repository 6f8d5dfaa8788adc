"""rttlens: where the time went, counted in round trips, and why.

The `rttlens` binary this package installs analyses packet captures; this
package runs it and reads its columnar records (docs/schema.md):

- `rttlens.analyze(capture_set)`: the connections, findings and requests of
  one capture set as pyarrow tables, on this machine;
- `rttlens.spark.analyze(spark, paths, shards=N)`: many capture sets on
  Apache Spark, as DataFrames (docs/fleet.md);
- `rttlens.CaptureSet`: one host's rotated files and their TLS key logs;
  `rttlens.capture_sets(root)`: one per host directory under a directory
  or an object store's prefix.
"""

from .engine import TABLES, CaptureSet, Tables, analyze, binary, capture_sets, schemas

__all__ = ["TABLES", "CaptureSet", "Tables", "analyze", "binary", "capture_sets", "schemas", "spark"]
__version__ = "0.1.0"


def __getattr__(name):
    # `rttlens.spark` after `import rttlens` alone, without importing
    # pyspark until it is used
    if name == "spark":
        import importlib

        return importlib.import_module(".spark", __name__)
    raise AttributeError(f"module 'rttlens' has no attribute {name!r}")
