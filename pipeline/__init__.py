"""The Spark jobs over the metadata log (fold, permissions, changes, usage): the only package that imports pyspark.

Modules hold no global state but the session `session.build_session` creates; each job is a function of
a SparkSession and its inputs. Records are decoded inside Spark tasks by this project's own library
(`metadata_log`), so the jobs read exactly what the single-process commands read.
"""
