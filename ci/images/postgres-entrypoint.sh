#!/bin/sh
# The postgres:15 stand-in's entrypoint: what the official image does that a stack
# relies on. On first start, a cluster whose superuser is POSTGRES_USER with
# POSTGRES_PASSWORD (required, read from the environment, never put in argv or
# left on disk) and a database POSTGRES_DB; then the server as the postgres user,
# listening on every address of the container, password required over TCP.
set -eu
if [ "${1#-}" != "$1" ]; then set -- postgres "$@"; fi
PGDATA=${PGDATA:-/var/lib/postgresql/data}
export PGDATA

if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "postgres stand-in: POSTGRES_PASSWORD is empty; set it for the superuser" >&2
    exit 2
  fi
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  if [ "$db" != postgres ]; then
    printf 'CREATE DATABASE "%s";\n' "$db" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "postgres stand-in: initialised $PGDATA (user $user, database $db)"
fi
exec "$@"
