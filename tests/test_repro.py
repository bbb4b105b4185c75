"""seed_everything: what it sets, and that skipping deterministic mode's NaN fill changes no result."""

import pytest
import torch
from attention_course import seed_everything
from attention_course.experiments.dates import train_date_transformer, train_date_translator


def test_seed_everything_sets_threads_and_determinism():
    seed_everything()
    assert torch.get_num_threads() == 1
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.utils.deterministic.fill_uninitialized_memory is False


@pytest.mark.parametrize("train", [
    lambda: train_date_translator(steps=3, batch_size=8, hidden_dim=8)[0],
    lambda: train_date_transformer(steps=3, batch_size=8, d_model=16, num_heads=2, d_ff=16)[0],
])
def test_training_is_bit_identical_with_and_without_the_nan_fill(train):
    seed_everything()
    try:
        torch.utils.deterministic.fill_uninitialized_memory = True       # new memory filled with NaN
        filled = train()
    finally:
        torch.utils.deterministic.fill_uninitialized_memory = False
    plain = train()
    for (name, p), q in zip(filled.state_dict().items(), plain.state_dict().values()):
        assert torch.equal(p, q), name
        assert not torch.isnan(p).any(), name


def test_seed_everything_rejects_bad_arguments():
    with pytest.raises(ValueError, match="seed"):
        seed_everything(-1)
    with pytest.raises(ValueError, match="threads"):
        seed_everything(0, threads=0)
