"""Command groups of the `toolmesh` CLI that reach into the gateway and the router at once, above
both (toolmesh/cli.py registers them; nothing in gateway/ or router/ imports them).

router_commands.py  `toolmesh router build|eval|examples`: the router's model, its evaluation, and
                    the examples gateways learned (in the shared state's Redis or in SQLite)
"""
