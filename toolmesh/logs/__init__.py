"""toolmesh's log lines (JSON or text), written by pods and the gateway alike: lines.py."""
