"""OpenAI's formats: tool calls in and results out (toolcalls.py), and the chat proxy: its
request (chat_request.py), its tool loop (chat.py) answered whole or streamed (chat_stream.py,
reading upstream rounds with deltas.py and writing chunks.py's chunks), which of a caller's
functions it offers the model (tool_selection.py), and its upstream client (upstream.py)."""
