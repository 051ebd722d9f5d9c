"""The pipeline's error: bad input or a log that breaks an invariant, as one line naming what and where.

Immutable exception values.
"""

from __future__ import annotations


class PipelineError(Exception):
    """A job cannot run on this input (the message names the file, offset, option or field)."""
