"""Following a runtime's functions when a pod's change on their own (a stdio MCP server's
`list_changed`), beyond what its template listed.

retries.py        reading a pod's functions again: bounded attempts, with backoff
remote_listing.py the same for pods reached by an address, told by their answers' trailers
disagreement.py   a listed function's call landing on a pod without it: said clearly

The pods the gateway forks say so in their liveness answers (../template_keeper.py).
"""
