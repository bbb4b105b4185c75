"""Settings every test shares."""

import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    """One torch thread for the whole suite, as in the notebooks: the tests' tensors are small, and
    on a busy 2-core machine several threads make them many times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
