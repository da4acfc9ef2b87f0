"""From a prompt to arguments: values, dates and enum choices (extract.py, values.py, dates.py),
an optional LLM fallback (llm.py) and the code snippet that repeats a call (snippet.py).
Running a prompt (route, extract, invoke) is the router's own: router/execution.py."""
