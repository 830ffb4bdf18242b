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

# Secure brokers (start --secure, cluster start --secure; deploy/kafka/README.md).
# Users with a SCRAM credential (schemas/kafka/acl_table.py USERS); broker and admin are super users.
KAFKA_USERS=(broker admin projector summarizer sink http-api)
# A hanging transaction (a client that begins one and never ends it) holds every read_committed
# reader of its partitions below its first record until the coordinator aborts it at the
# transaction's timeout; clients pick that timeout, and by default the broker lets them pick 15
# minutes. The workers use 30 s (projector) and 60 s (summarizer, configurable): 2 minutes is
# the longest stall a principal allowed to transact can cause.
KAFKA_TRANSACTION_MAX_TIMEOUT_MS=120000
# kafka_credentials fills it: the format tool's argument file of --add-scram arguments.
KAFKA_SCRAM=()

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

kafka_check_mode() { # MARKER FORMATTED(0|1) SECURE(0|1) -> exits unless the modes agree
    # The mode a data folder was formatted in is its mode for good: a secure folder started open
    # would hand every topic to anyone on the machine, an open one has no credentials.
    local was=0 mode=("without --secure" "with --secure")
    (($2)) || return 0
    [[ -f $1 ]] && was=1
    if ((was != $3)); then
        echo "kafka: $(dirname "$1") was formatted ${mode[$was]}; start it ${mode[$was]} again, or wipe it (stop --wipe)" >&2
        exit 1
    fi
}

kafka_credentials() { # FOLDER FORMATTED(0|1) -> each user's password file, KAFKA_SCRAM filled
    # The passwords reach the format tool in a java argument file (@FILE, 0600), never on a
    # command line: any local user can read a process's command line while it runs.
    local user file args=$1/format.args
    mkdir -p "$1"
    chmod 700 "$1"
    : >"$args"
    chmod 600 "$args"
    KAFKA_SCRAM=("@$args")
    for user in "${KAFKA_USERS[@]}"; do
        file=$1/$user
        if [[ ! -s $file ]]; then
            if (($2)); then
                echo "kafka: $file is missing; the storage holds its credential already: wipe the folder to make new ones" >&2
                exit 1
            fi
            # Hex: nothing the --add-scram syntax or a JAAS string would read as a delimiter.
            "$KAFKA_PYTHON" -c 'import secrets; print(secrets.token_hex(24))' >"$file"
            chmod 600 "$file"
        fi
        printf -- '--add-scram\nSCRAM-SHA-512=[name=%s,password=%s]\n' "$user" "$(<"$file")" >>"$args"
    done
}

kafka_listener_props() { # SECURE CLIENT_PORT CONTROLLER_PORT CREDENTIALS -> listener, auth lines
    local secure=$1 port=$2 controller_port=$3 name=PLAINTEXT protocol=PLAINTEXT password
    ((secure)) && name=CLIENT protocol=SASL_PLAINTEXT
    cat <<PROPS
listeners=$name://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=$name://127.0.0.1:$port
inter.broker.listener.name=$name
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:$protocol,$name:$protocol
PROPS
    ((secure)) || return 0
    password=$(<"$4/broker")
    cat <<PROPS
listener.name.client.sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.client.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="$password";
listener.name.controller.sasl.enabled.mechanisms=PLAIN
sasl.mechanism.controller.protocol=PLAIN
listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="$password" user_broker="$password";
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:broker;User:admin
transaction.max.timeout.ms=$KAFKA_TRANSACTION_MAX_TIMEOUT_MS
PROPS
}

kafka_grant() { # BOOTSTRAP CREDENTIALS -> grants each process's ACLs as admin (grant_acls.py)
    if ! PYTHONPATH=$KAFKA_ROOT${PYTHONPATH:+:$PYTHONPATH} "$KAFKA_PYTHON" \
        "$KAFKA_DEPLOY/grant_acls.py" "$1" --credentials "$2"; then
        echo "kafka: granting the ACLs failed" >&2
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
