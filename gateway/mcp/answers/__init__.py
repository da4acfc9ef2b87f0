"""The fast path's answers as the MCP SDK gives them: their bytes (call_answer.py), the event stream of
a long call (long_calls.py) and the span of the request (call_spans.py). They know the SDK and the
call's result, and nothing of the endpoint's (which passes in what they need)."""
