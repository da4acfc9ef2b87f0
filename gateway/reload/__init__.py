"""Hot reload: which files a runtime's modules come from, and watching them for changes.

sources.py   the Python files behind a runtime's modules; forgetting their stale bytecode
watcher.py   `toolmesh up --reload`: polls those files and reloads the runtimes they belong to

The reload itself is the core's (gateway/core/reloading.py) and the pool's (pool/rollout.py, and
the standby templates of pool/launcher.py). Below the pool, which imports sources.py.
"""
