"""Teaching: ``checks`` (exercise self-checks, one module per chapter) and ``debugging`` (planted
attention bugs and the checks that catch them)."""
