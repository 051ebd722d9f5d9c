"""`python -m pipeline JOB ...`: the driver program (see pipeline.driver)."""

from pipeline.driver import main

main()
