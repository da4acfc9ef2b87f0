"""The function index the router searches: what it reads of a function and how it scores a prompt.

text.py        what the router reads about a function (`Document`), and how text becomes terms
bm25.py        Okapi BM25 over those terms: the lexical half
segments.py    rows grouped by function in one matrix
whitening.py   a linear map fitted on the examples, so directions that tell functions apart count more
views.py       example prompts as extra (whitened) views of a function
index.py       `FunctionIndex`: dense and lexical scores fused into one

Below routing, safety and extraction (which read `text.py`); above only the embeddings (embedding/).
"""
