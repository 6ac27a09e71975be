#!/usr/bin/env bash
# The container engine tests/test_compose.py runs the Compose demo in, for CI on a
# Debian machine that reaches Debian's mirror and PyPI but no image registry:
#   ci/engine.sh start   install docker.io + docker-compose + debootstrap if missing, start
#                        dockerd (as root, in the background) unless an engine answers,
#                        build the stand-in base images and the kit's image
#   ci/engine.sh stop    stop the dockerd that `start` started, by its PID, and only that
# dockerd leaves the host's firewall and forwarding alone (--iptables=false,
# --ip-forward=false): by default it turns FORWARD to DROP and filters every bridge,
# which breaks the network-namespace tests that run beside it. Published ports still
# work (docker-proxy), containers reach each other and the host; only the kit's build
# reaches out, for pip, and it does so on the host's network (docker-compose.yml).
# `start` never fails CI by itself: where no engine can start, it says why and the test
# skips with its own reason. Images stay in /var/lib/docker, so a second run is warm.
set -uo pipefail
cd "$(dirname "$0")/.."
# dockerd's output and the PID of the one we started: outside the work tree.
LOG=/var/tmp/loadkit-dockerd.log
PIDFILE=/var/tmp/loadkit-dockerd.pid
# Seconds dockerd gets to answer after it starts: it takes ~5 here.
START_WAIT_S=60

say() { echo "ci/engine: $*"; }

start() {
  rm -f "$PIDFILE"  # a PID from an earlier run names no process of this one
  if ! command -v dockerd >/dev/null || ! command -v docker-compose >/dev/null || ! command -v debootstrap >/dev/null; then
    [[ $(id -u) == 0 ]] || { say "not root: nothing installed (docker.io, docker-compose, debootstrap)"; return 0; }
    say "installing docker.io docker-compose debootstrap"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      docker.io docker-compose debootstrap >/dev/null; } || { say "apt-get install failed: no engine"; return 0; }
  fi
  if ! docker info >/dev/null 2>&1; then
    [[ $(id -u) == 0 ]] || { say "not root and no engine answers: none started"; return 0; }
    setsid dockerd --iptables=false --ip-forward=false >"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    for _ in $(seq "$START_WAIT_S"); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || { say "dockerd did not answer in ${START_WAIT_S}s: $(tail -3 "$LOG")"; return 0; }
    say "dockerd started (pid $(cat "$PIDFILE"), log $LOG)"
  fi
  ci/images/build.sh || { say "stand-in base images failed: tests/test_compose.py will skip"; return 0; }
  # pip inside the build uses the host's index where that is not PyPI (never stored).
  local index=${PIP_INDEX_URL:-$(python3 -m pip config get global.index-url 2>/dev/null || true)}
  [[ $index == http* ]] && export PIP_INDEX_URL=$index
  # Built as Compose builds it (same build args, so the test's `up --build` finds it cached).
  docker-compose build --force-rm stub >/var/tmp/loadkit-build.log 2>&1 ||
    { say "the kit's image did not build: $(tail -3 /var/tmp/loadkit-build.log)"; return 0; }
  say "agent-loadkit:latest built"
}

stop() {
  [[ -f $PIDFILE ]] || return 0
  local pid
  pid=$(cat "$PIDFILE")
  rm -f "$PIDFILE"
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == dockerd ]] || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || return 0; sleep 1; done
  say "dockerd (pid $pid) still running after 30 s"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  *) echo "usage: ci/engine.sh start|stop" >&2; exit 2 ;;
esac
