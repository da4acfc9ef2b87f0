"""Rolling a runtime onto a new version of its modules without failing a call.

The order is what keeps every call served. The new template (the modules imported
again) is started while the old one serves; it forks as many pods as the runtime
runs now (at least `min_replicas`), and only once all of them are ready does
anything change: in one step of the event loop, new calls go to the new pods and
the old pods drain (they finish the calls they hold; one that arrives anyway is
refused and replicas.py sends it to a new pod). The old template stops once its
pods have. If the modules fail to import, or a new pod fails to start, nothing
changes: the new template is stopped and the old version keeps serving.
"""

from __future__ import annotations

import asyncio
import logging

from toolmesh.errors import Unavailable
from toolmesh.gateway.pool.launcher import Spawned, TemplateProcess
from toolmesh.gateway.pool.replicas import ReplicaSet

log = logging.getLogger("toolmesh.pool")


async def roll(replicas: ReplicaSet, template: TemplateProcess) -> None:
    """Switch `replicas` to pods of `template`, ready ones, or raise Unavailable and change nothing."""
    wanted = max(replicas.replica_counts()["ready"], replicas.config.min_replicas)
    timeout = replicas.config.startup_timeout
    started = await asyncio.gather(*(template.spawn(timeout) for _ in range(wanted)), return_exceptions=True)
    failed = [result for result in started if isinstance(result, BaseException)]
    if failed or not template.alive:
        await template.close()  # and the pods it did start
        why = failed[0] if failed else "its template process exited"
        raise Unavailable(
            f"runtime {replicas.name!r}: a pod of the new version failed to start ({why}); "
            "the old version keeps serving"
        )
    replicas.switch(template, [pod for pod in started if isinstance(pod, Spawned)])
    log.info(
        "runtime reloaded", extra={"runtime": replicas.name, "pid": template.process.pid, "pods": wanted}
    )
