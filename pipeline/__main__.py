"""`python -m kraftacl.pipeline JOB ...`: the driver program (see kraftacl.pipeline.driver)."""

from kraftacl.pipeline.driver import main

main()
