"""Chapter 1's exercise on the one vector the plain decoder receives: the check accepts the reference
and rejects the typical wrong choices of a state, each with a message that says what is wrong."""

import pytest
import torch
from attention_course.teaching.checks import CheckFailed, check_last_state


def last_real_state(hs, lengths):
    return hs[torch.arange(len(lengths)), lengths - 1][None]          # (1, B, H)


def test_last_state_accepts_reference(capsys):
    check_last_state(last_real_state)
    assert "Correct" in capsys.readouterr().out


def test_last_state_accepts_numpy_and_float64(capsys):
    check_last_state(lambda hs, l: last_real_state(hs, l).double().numpy())
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda hs, l: hs[:, 0][None], "FIRST token"),
    (lambda hs, l: hs[:, -1][None], r"last POSITION .*rows \[1, 2, 3, 5\]"),
    (lambda hs, l: last_real_state(hs, l)[0], "add the leading axis"),
    (lambda hs, l: hs.mean(1)[None], "average of the states"),
    (lambda hs, l: (hs.sum(1) / l[:, None])[None], "average of the states"),
    (lambda hs, l: hs[torch.arange(len(l)), (l - 2).clamp(min=0)][None], r"row 0 .* you took H\[0, 7\]"),
    (lambda hs, l: hs[torch.arange(len(l)), l][None], "raised IndexError"),
    (lambda hs, l: hs[:, :1], "shape"),
    (lambda hs, l: torch.zeros(1, len(l), hs.shape[-1]), "none of its states"),
    (lambda hs, l: None, "did your function return"),
])
def test_last_state_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_last_state(wrong)


def test_last_state_leaves_the_random_stream_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_last_state(last_real_state)
    assert torch.equal(torch.rand(3), expected)
