"""What every HTTP server of the gateway is guarded by, below its routes (http/, http/lean/):

browser_guard.py     web pages kept out: `Host`, `Origin` and `Content-Type` checks, CORS
connection_guard.py  how many connections at once, and how long a request's head and body may take
guarded_protocol.py  uvicorn's httptools protocol with those connection limits
"""
