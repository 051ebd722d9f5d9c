"""Input objects from files or HTTP bodies: validation (`validate`), acls.json, and the what-if files and their
evaluation.
"""
