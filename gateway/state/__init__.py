"""State that every gateway replica must agree on, behind small seams with a local and a Redis
implementation each (`[state] url`, or TOOLMESH_STATE_URL):

    limits.py         RateLimits/Bucket: a key's token bucket     (local: this process)
    redis_limits.py     ... in Redis, one Lua script per take     (shared)
    feed.py           ChangeFeed: catalog changes -> MCP list_changed
    redis_feed.py       ... through Redis pub/sub
    redis_sessions.py the router's `Sessions` in Redis            (local: router/sessions.py, SQLite)
    redis_client.py   the one client, and Redis errors -> StateUnavailable (fail closed)
    sqlite_thread.py  the one thread a SQLite file is used from (function state, outcomes, jobs, ticks)

`open_state` (gateway/shared_state.py) builds all of it, with the job and outcome stores, from the
config; nothing here imports those stores or the core.

Async jobs are in Redis too (gateway/jobs/redis_jobs.py); what the router learns at run time
stays per replica.
"""
