# shellcheck shell=bash
# Shared by deploy/kafka/start, stop and cluster (sourced, not run): paths, JVM flags and the
# steps every broker goes through (render, format once, launch, wait, terminate).
# Assumes the sourcing script runs with `set -euo pipefail`.

# The brokers' data (every tenant's events), configs and logs are the owner's only.
umask 077

KAFKA_DEPLOY=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KAFKA_ROOT=$(cd "$KAFKA_DEPLOY/../.." && pwd)
KAFKA_LIB=${CTXSTREAM_KAFKA_LIB:-$KAFKA_ROOT/.kafka/lib}
KAFKA_PYTHON=${CTXSTREAM_PYTHON:-python3}
# Extra arguments of wait_ready.py (a secure broker's: --sasl-user, --sasl-password-file).
KAFKA_WAIT_ARGS=()

# KAFKA_JVM_PERFORMANCE_OPTS of Kafka's bin/kafka-run-class.sh.
KAFKA_GC_OPTS=(-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
    -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true)
KAFKA_LOG_OPTS=("-Dlog4j.configuration=file:$KAFKA_DEPLOY/log4j.properties")

kafka_now_ms() {
    local us=${EPOCHREALTIME//[.,]/}
    echo $((us / 1000))
}

kafka_elapsed() { # START_MS -> "1.234s"
    local ms=$(($(kafka_now_ms) - $1))
    printf '%d.%03ds' $((ms / 1000)) $((ms % 1000))
}

kafka_prop() { # FILE KEY -> value of KEY in a .properties file
    sed -n "s/^$2=//p" "$1" | tail -n 1
}

kafka_check_port() { # NAME VALUE -> exits unless VALUE is a port number 1-65535
    # Ports are rendered into server.properties: anything but digits (a newline, say) could
    # add properties of its own.
    if ! [[ $2 =~ ^[1-9][0-9]{0,4}$ ]] || (($2 > 65535)); then
        echo "kafka: $1 must be a port number 1-65535, got $(printf %q "$2")" >&2
        exit 1
    fi
}

kafka_port_open() { # PORT -> 0 when something accepts connections on 127.0.0.1:PORT
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

kafka_alive() { # PID -> 0 while the process exists and is not a zombie
    local state
    state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null) || return 1
    [[ -n $state && $state != Z ]]
}

kafka_running_pid() { # PIDFILE PROPERTIES -> prints the pid when that broker process is alive
    local pid
    [[ -f $1 ]] || return 1
    pid=$(<"$1")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    # The pid must still be our broker, not a recycled pid after a crash or reboot.
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "kafka.Kafka $2" || return 1
    echo "$pid"
}

kafka_new_cluster_id() {
    # 16 random bytes, URL-safe base64 without padding, never starting with '-' (Kafka's Uuid).
    "$KAFKA_PYTHON" -c 'import base64, uuid
while (c := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"): pass
print(c)'
}

kafka_format() { # PROPERTIES CLUSTER_ID OUTPUT [ARGS...] -> formats log.dirs unless formatted
    local logdir props=$1 id=$2 out=$3
    shift 3
    logdir=$(kafka_prop "$props" log.dirs)
    [[ -f $logdir/meta.properties ]] && return 0
    # The tool logs its whole configuration at INFO: keep that in OUTPUT, show it on failure.
    if ! java -Xmx256m "${KAFKA_LOG_OPTS[@]}" -cp "$KAFKA_LIB/*" kafka.tools.StorageTool format \
        --cluster-id "$id" --config "$props" --ignore-formatted "$@" >"$out" 2>&1; then
        echo "kafka: formatting $logdir failed:" >&2
        tail -n 40 "$out" >&2
        return 1
    fi
}

kafka_lock() { # FILE -> holds an exclusive lock on FILE (fd 8) until the script exits
    exec 8>"$1"
    if ! flock -w 180 8; then
        echo "kafka: another start or stop still holds $1 after 180s" >&2
        return 1
    fi
}

kafka_launch() { # PROPERTIES LOGDIR PIDFILE HEAP_OPTS... -> starts the broker in the background
    local props=$1 logs=$2 pidfile=$3
    shift 3
    mkdir -p "$logs"
    # A fresh log per launch, so the readiness check never sees the previous run's lines.
    [[ -f $logs/server.log ]] && mv -f "$logs/server.log" "$logs/server.log.prev"
    # setsid: the broker outlives the caller's process group (a test runner, a terminal);
    # every descriptor is redirected so callers that capture our output do not wait on it,
    # and the lock of kafka_lock (fd 8) is closed so it is released when the script ends.
    setsid java "$@" "${KAFKA_GC_OPTS[@]}" "${KAFKA_LOG_OPTS[@]}" "-Dkafka.logs.dir=$logs" \
        -cp "$KAFKA_LIB/*" kafka.Kafka "$props" </dev/null >"$logs/server.log" 2>&1 8>&- &
    echo $! >"$pidfile"
}

kafka_wait_started() { # LOG PID DEADLINE_MS -> waits for the started line while PID lives
    until grep -q 'Kafka Server started' "$1" 2>/dev/null; do
        if ! kafka_alive "$2"; then
            echo "kafka: broker pid $2 exited during startup; last lines of $1:" >&2
            tail -n 40 "$1" >&2 || true
            return 1
        fi
        if (($(kafka_now_ms) > $3)); then
            echo "kafka: no 'Kafka Server started' in time; last lines of $1:" >&2
            tail -n 40 "$1" >&2 || true
            return 1
        fi
        sleep 0.1
    done
}

kafka_wait_brokers() { # BOOTSTRAP COUNT DEADLINE_MS -> waits for a metadata answer listing COUNT
    local left=$(($3 - $(kafka_now_ms)))
    ((left > 1000)) || left=1000
    "$KAFKA_PYTHON" "$KAFKA_DEPLOY/wait_ready.py" "$1" --brokers "$2" \
        --timeout "$((left / 1000)).$((left % 1000 / 100))" "${KAFKA_WAIT_ARGS[@]}"
}

kafka_terminate() { # PID [GRACE_S] -> SIGTERM, then SIGKILL after GRACE_S (default 30)
    local pid=$1 grace=${2:-30} waited=0
    kill -TERM "$pid" 2>/dev/null || return 0
    while kafka_alive "$pid"; do
        if ((waited >= grace * 10)); then
            echo "kafka: pid $pid still up after ${grace}s, sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    # A killed process may take a moment to release its ports.
    while kafka_alive "$pid"; do sleep 0.1; done
}
