"""Self-checks for the chapters' exercises, one module per chapter.

Each ``check_*`` takes a student's answer, prints a confirmation when it is right and raises
:class:`CheckFailed` with a message that says *what* is wrong when it is not.
"""

from ._base import CheckFailed
from .bottleneck import check_last_state, check_linear_rnn_gradient, check_reverse_padded, check_token_accuracy

__all__ = ["CheckFailed", "check_reverse_padded", "check_token_accuracy", "check_linear_rnn_gradient",
           "check_last_state"]
