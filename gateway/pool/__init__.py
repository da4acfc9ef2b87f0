"""The serverless pool: how the gateway runs and reaches runtime pods.

runtime_pool.py    the RuntimePool seam and Pool, which holds every runtime
replicas.py        one runtime's pods: started on demand, balanced, scaled, replaced
launcher.py        the gateway's handle on a template process that forks pods, and standbys
                   (templates started ahead of a reload)
pods.py            one pod as the pool holds it; PodTransport (its road for unary calls), the retry loop
rollout.py         a runtime rolled onto its re-imported modules with no failed call (hot reload)
activator.py       calls held while a pod starts (scale from zero)
remote_runtime.py  runtimes whose pods someone else runs (an address, e.g. on Kubernetes)
kube_scaler.py     waking a runtime scaled to zero through the Kubernetes API
runtime_client.py  gRPC to a pod;  socket_client.py: unary calls over a Unix socket
pool_metrics.py    the pool's Prometheus series
startup/           runtimes that load from outside the gateway, in the background, retried with backoff
"""
