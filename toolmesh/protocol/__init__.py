"""The contract between the gateway and its pods, which both sides import and which imports
neither (only errors, tracing, the function SDK's types and the generated toolmesh.v1 messages).

calls.py      the call the gateway hands a pod (`Call`), request ids, outcomes, `REFUSED`
wire.py       protobuf messages <-> the call, result and spec types (gRPC and the socket)
frames.py     the Unix-socket frames: header, kinds, the traced INVOKE, the frame reader
channel.py    options of the gRPC servers on either side
pod_env.py    the environment variables the gateway sets for a pod, and their reader
defaults.py   ports, limits, exit codes both sides agree on
loop_report.py  the liveness report a pod's watchdog thread answers pings with
listing_trailer.py  the revision of a pod's functions on its gRPC answers' trailers
"""
