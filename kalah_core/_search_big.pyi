"""Type stub of the search compiled for the big board (_search_big.pyx): no Python names;
``_search.Searcher`` calls it at the root."""
