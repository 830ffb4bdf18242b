# shellcheck shell=bash
# Shared by deploy/postgres/start and stop (sourced, not run): where the throwaway cluster lives
# and how to run PostgreSQL's tools as the postgres user. Assumes `set -euo pipefail`.

# Everything created from here on (cluster folder, password file, logs) is the owner's only.
umask 077

PG_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PG_BIN=/usr/lib/postgresql/15/bin # Debian's layout for postgresql-15
PG_DIR=${CTXSTREAM_POSTGRES_DIR:-$PG_ROOT/.run/postgres}
# When the postgres user cannot reach PG_DIR (a repo under a private home, say), the cluster
# lives in a folder under /var/tmp whose path is recorded here.
PG_PATHFILE=$PG_DIR.path
# The only folders a recorded path may name: what `mktemp -d` makes for start.
PG_TMP_PATTERN='^/var/tmp/ctxstream-postgres\.[A-Za-z0-9]+$'

pg_now_ms() {
    local us=${EPOCHREALTIME//[.,]/}
    echo $((us / 1000))
}

pg_fail() { # MESSAGE -> prints it and exits non-zero
    echo "postgres: $1" >&2
    exit 1
}

pg_check_port() { # NAME VALUE -> exits unless VALUE is a port number 1-65535
    if ! [[ $2 =~ ^[1-9][0-9]{0,4}$ ]] || (($2 > 65535)); then
        pg_fail "$1 must be a port number 1-65535, got $(printf %q "$2")"
    fi
}

pg_check_folder() { # PATH -> exits unless PATH is safe on pg_ctl's shell command line
    # pg_ctl runs the server through /bin/sh with -D and -l inside double quotes, where
    # $ ` \ and " are still special; -k is a comma-separated list; a newline ends a line.
    if [[ $1 == *[$'\n'\"\$\`\\,]* ]]; then
        pg_fail "the cluster folder must not contain a newline, \", \$, \`, \\ or a comma: $(printf %q "$1")"
    fi
}

pg_shell_quote() { # TEXT -> TEXT in single quotes for /bin/sh ('\'' for each single quote)
    printf "'%s'" "${1//\'/\'\\\'\'}"
}

as_postgres() { # initdb and the server refuse to run as root
    if ((EUID == 0)); then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

pg_folder() { # -> the cluster's folder if one exists (data/, server.log, socket, password)
    if [[ -f $PG_PATHFILE ]]; then
        cat "$PG_PATHFILE" # checked when this file was sourced
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

# A recorded path is read back from a file that anyone with write access to PG_DIR's parent
# could have changed: start and stop never use (or delete) one that start would not have made.
if [[ -f $PG_PATHFILE ]] && ! [[ $(<"$PG_PATHFILE") =~ $PG_TMP_PATTERN ]]; then
    pg_fail "$PG_PATHFILE names $(printf %q "$(<"$PG_PATHFILE")"), not a /var/tmp/ctxstream-postgres.* folder; refusing to use or delete it (check it, then remove that file)"
fi
