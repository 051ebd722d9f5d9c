"""The pipeline's driver program for spark-submit: `spark-submit [options] scripts/kraft-acl-audit.py JOB ...`.

A file outside the package, so that running it puts no package directory first on sys.path
(`kraft-acl audit JOB` runs the same program as `python -m kraftacl.pipeline JOB`).
"""

from kraftacl.pipeline.driver import main

main()
