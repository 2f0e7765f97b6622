#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests (SPEC D1): Debian's PostgreSQL on loopback.
#
#   .ci/postgres.sh install           apt-get install postgresql when no initdb is found (root only)
#   .ci/postgres.sh start DIR PORT    initdb a scratch cluster in DIR, start it on 127.0.0.1:PORT,
#                                     print its URL (run as the postgres user when we are root)
#   .ci/postgres.sh restart DIR       restart it (fast shutdown: connections are dropped)
#   .ci/postgres.sh stop DIR          stop the cluster in DIR (fast shutdown)
#
# The pgvector server the memory tests need comes from PyPI (`pgserver`, see tests/helpers/pg_servers.py):
# Debian's apt sources carry no pgvector package.
set -euo pipefail

bindir() {
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    [ -n "$found" ] && [ -x "$found/initdb" ] && echo "$found"
}

as_owner() {  # run a server command as the data directory's owner (initdb refuses root)
    if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$*"; else bash -c "$*"; fi
}

case "${1:-}" in
install)
    if [ -z "$(bindir)" ]; then
        [ "$(id -u)" = 0 ] || { echo "PostgreSQL is not installed and we are not root: apt-get install postgresql" >&2; exit 1; }
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
    bindir
    ;;
start)
    dir=${2:?data directory}; port=${3:?port}
    bin=$(bindir) || { echo "no PostgreSQL server found: run .ci/postgres.sh install" >&2; exit 1; }
    rm -rf "$dir"; mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; fi
    as_owner "'$bin/initdb' -D '$dir/data' -A trust -U postgres -E UTF8 --locale=C.UTF-8 >'$dir/initdb.log' 2>&1" \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    as_owner "'$bin/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -t 60 \
        -o \"-c listen_addresses=127.0.0.1 -p $port -k '$dir' -c max_connections=200 -c fsync=on\" start >/dev/null" \
        || { cat "$dir/server.log" >&2; exit 1; }
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
restart)
    dir=${2:?data directory}
    bin=$(bindir) || exit 1
    as_owner "'$bin/pg_ctl' -D '$dir/data' -m fast -w -t 60 restart >/dev/null"
    ;;
stop)
    dir=${2:?data directory}
    bin=$(bindir) || exit 0
    if [ -f "$dir/data/postmaster.pid" ]; then as_owner "'$bin/pg_ctl' -D '$dir/data' -m fast -w stop >/dev/null"; fi
    ;;
*)
    echo "usage: $0 install | start DIR PORT | restart DIR | stop DIR" >&2; exit 2
    ;;
esac
