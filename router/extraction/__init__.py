"""From a prompt to arguments: values, dates and enum choices (extract.py, values.py, dates.py),
an optional LLM fallback (llm.py), prompt execution (execution.py) and the code snippet that
repeats a call (snippet.py)."""
