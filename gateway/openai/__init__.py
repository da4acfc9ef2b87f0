"""OpenAI's formats: tool calls in and results out (toolcalls.py), the chat proxy's tool loop
(chat.py) with its upstream client (upstream.py), and completions as stream chunks (chunks.py)."""
