#!/bin/sh
# Dockerfile.postgres's entrypoint: on first start (an empty $PGDATA) make the cluster as the official image
# does, with POSTGRES_USER as its superuser, POSTGRES_PASSWORD (or the file POSTGRES_PASSWORD_FILE) as that
# user's password, and the database POSTGRES_DB; password (SCRAM) authentication over TCP, trust on the local
# socket inside the container only. Then run postgres in the foreground, listening on every address.
set -eu
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
    password=$(cat "$POSTGRES_PASSWORD_FILE")
  else
    password=${POSTGRES_PASSWORD:-}
  fi
  if [ -z "$password" ]; then
    echo "postgres-entrypoint: set POSTGRES_PASSWORD (or POSTGRES_PASSWORD_FILE): the password of $user" >&2
    exit 1
  fi
  umask 077
  pwfile=$(mktemp)
  printf '%s\n' "$password" >"$pwfile"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
         --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\" OWNER \"$user\"" | postgres --single -D "$PGDATA" -c log_checkpoints=off postgres >/dev/null
  fi
  echo "postgres-entrypoint: initialised $PGDATA (superuser $user, database $db)"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
