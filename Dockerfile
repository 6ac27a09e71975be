# One image for every role (master, worker, stub, target, seed): the roles differ
# only by command, so a capacity run and a test run use the same code.
# The base is pinned so a rebuild months later runs the same interpreter; where no
# image registry answers, ci/images/build.sh builds a stand-in under this very name.
FROM python:3.11.2-slim-bookworm

# The package index pip uses when it is not PyPI: passed by the operator's
# environment (docker-compose.yml forwards it), never written here.
ARG PIP_INDEX_URL

WORKDIR /kit
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1

COPY requirements.txt .
RUN if [ -z "$PIP_INDEX_URL" ]; then unset PIP_INDEX_URL; fi; \
    pip install --no-cache-dir -r requirements.txt

# Nothing in the kit needs root. UID 1000 is the first user on most Linux hosts, so a
# ./runs the operator made is writable as it is (docker-compose.yml: LOADKIT_UID).
RUN useradd --uid 1000 --user-group --no-create-home --home-dir /kit loadkit
COPY . .
USER loadkit

# Locust's web UI and master port; the stub and the target bind what their command says.
EXPOSE 8089 5557 4020 8000

CMD ["locust", "-f", "locustfile.py", "--help"]
