# syntax=docker/dockerfile:1
# One image for the whole mesh; the command picks the role (see deploy/):
#   gateway:  toolmesh up --config /etc/toolmesh/toolmesh.toml      (the default CMD)
#   runtime:  toolmesh runtime --module examples.weather ...
#
#   docker build -t toolmesh:0.1.0 .
#
# Your own functions: build FROM this image and COPY your modules into /app, the working
# directory, which `toolmesh runtime --module ...` imports from.

ARG PYTHON_VERSION=3.11

# ---- build: the package and its dependencies in a virtualenv, and the router model ----
FROM python:${PYTHON_VERSION}-slim AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/toolmesh
WORKDIR /src
COPY . .
RUN /opt/toolmesh/bin/pip install ".[mesh]"
# The router's model is built here, once, so pods never build it at start. The command
# comes with the router (toolmesh.router, its own issue): until the installed toolmesh
# has it, this step says so and goes on; once it has it, a failed build fails the image.
RUN if /opt/toolmesh/bin/toolmesh router --help >/dev/null 2>&1; then \
        /opt/toolmesh/bin/toolmesh router build; \
    else \
        echo "this toolmesh has no router yet: no router model to build"; \
    fi

# ---- run: the virtualenv, the examples, a non-root user ----
FROM python:${PYTHON_VERSION}-slim
# A fixed, unprivileged uid/gid: the manifests' securityContext names 10001.
RUN groupadd --system --gid 10001 toolmesh \
 && useradd --system --uid 10001 --gid 10001 --home-dir /app --shell /usr/sbin/nologin toolmesh
COPY --from=build /opt/toolmesh /opt/toolmesh
WORKDIR /app
# The default runtime serves examples/ (the wheel leaves them out: they are not the library).
COPY examples/ /app/examples/
# Byte-compiled now: at run time the root filesystem is read-only.
RUN /opt/toolmesh/bin/python -m compileall -q /app/examples
ENV PATH=/opt/toolmesh/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
# Gateway HTTP and gRPC; runtime gRPC and metrics.
EXPOSE 8080 50051 50061 9461
ENTRYPOINT ["toolmesh"]
CMD ["up", "--config", "/etc/toolmesh/toolmesh.toml"]
