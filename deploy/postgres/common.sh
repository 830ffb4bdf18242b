# shellcheck shell=bash
# Shared by deploy/postgres/start and stop (sourced, not run): where the throwaway cluster lives
# and how to run PostgreSQL's tools as the postgres user. Assumes `set -euo pipefail`.

PG_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PG_BIN=/usr/lib/postgresql/15/bin # Debian's layout for postgresql-15
PG_DIR=${CTXSTREAM_POSTGRES_DIR:-$PG_ROOT/.run/postgres}
# When the postgres user cannot reach PG_DIR (a repo under a private home, say), the cluster
# lives in a folder under /var/tmp whose path is recorded here.
PG_PATHFILE=$PG_DIR.path

pg_now_ms() {
    local us=${EPOCHREALTIME//[.,]/}
    echo $((us / 1000))
}

as_postgres() { # initdb and the server refuse to run as root
    if ((EUID == 0)); then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

pg_folder() { # -> the cluster's folder if one exists (data/, server.log, socket)
    if [[ -f $PG_PATHFILE ]]; then
        cat "$PG_PATHFILE"
    elif [[ -d $PG_DIR ]]; then
        (cd "$PG_DIR" && pwd)
    else
        return 1
    fi
}

pg_running_port() { # FOLDER -> prints the port when the server in FOLDER is running
    [[ -f $1/data/postmaster.pid ]] || return 1
    as_postgres "$PG_BIN/pg_ctl" -D "$1/data" status >/dev/null 2>&1 || return 1
    sed -n 4p "$1/data/postmaster.pid"
}
