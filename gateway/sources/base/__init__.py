"""What every source the gateway calls itself shares, below the sources (openapi/, remote_mcp/,
grpc_reflection/) and the factory that picks one (../factory.py).

service_runtime.py  `ServiceRuntime`, what the pool needs of one; `GatewaySource`, the bookkeeping
                    they keep alike; a call's arguments as the object a service is sent
naming.py           which of a service's operations a runtime keeps, and their function names
"""
