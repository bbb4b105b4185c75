"""What every exercise self-check shares: the failure type and the success message."""


class CheckFailed(AssertionError):
    """A self-check found a wrong answer; the message says what is wrong."""


def ok(message: str) -> None:
    """Report a passed check."""
    print(f"Correct: {message}")
