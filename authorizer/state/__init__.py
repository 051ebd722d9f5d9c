"""Event sourcing: records <-> ACLs, the immutable image and its delta, the loader and its publishers, the node, the
tailer, the controller, recovery, and the memory helpers of bulk loads.
"""
