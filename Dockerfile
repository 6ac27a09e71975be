# One image for every role (master, worker, stub, target, seed): the roles differ
# only by command, so a capacity run and a test run use the same code.
FROM python:3.11-slim

WORKDIR /kit
ENV PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1

COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

COPY . .

# Locust's web UI and master port; the stub and the target bind what their command says.
EXPOSE 8089 5557 4020 8000

CMD ["locust", "-f", "locustfile.py", "--help"]
