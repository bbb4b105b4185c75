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


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per browser-test module (tests/test_browser*.py); Playwright is
    imported only when a test asks for it."""
    from browser_support import chromium, require_browser

    with chromium(require_browser()) as b:
        yield b
