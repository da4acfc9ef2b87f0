"""Asynchronous calls: jobs queued by any front door and run by workers in the gateway.

    job.py            the job: who asked, what to call, its status, attempts, result, callback
    job_store.py      JobStore, the seam a store plugs into
    sqlite_jobs.py    the SQLite store: one file, WAL, claims with leases so a killed gateway's
                      jobs run again (the gateways of one machine)
    redis_jobs.py     the Redis store (`[state] url`): a stream and a consumer group, so any
                      replica runs a job and a killed replica's jobs are claimed by another
    redis_job_scripts.py  its Lua scripts: each change to a job is one, atomically
    argument_check.py what can be checked of the arguments at submit, before any pod runs
    callbacks.py      signed result callbacks (HMAC-SHA256) and their delivery
    destinations.py   where callbacks may go: public addresses and `[jobs] callback_hosts`
    job_runner.py     the workers: claim (in batches), call through the core, retry,
                      dead-letter, purge
    batcher.py        Batcher: calls made at once sent to the store together (settles, adds)
    job_service.py    JobService: submit, get, list, retry, cancel for a principal

Like the core, nothing here knows a transport: HTTP, gRPC and MCP (gateway/mcp/tasks.py, where
a job is a task) adapt to `JobService`.
"""
