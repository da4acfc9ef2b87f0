"""What keeps a pod's callers and its user code in their lanes.

`pod_auth` decides who may call a pod that listens on the network (a bearer token);
`call_output` and `output_pipe` frame and bound what functions print, so one call
cannot flood the log or hide which call said what; process groups (pod_process.py)
make a function's subprocesses end with their pod.
"""
