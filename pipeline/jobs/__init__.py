"""The jobs' library functions over `LogEvents`: fold (the state at an offset), permissions (and the decision rule it
applies inside tasks, `decide`), changes, usage, and Kafka's enum names for reports.
"""
