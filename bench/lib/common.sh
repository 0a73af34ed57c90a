# Shell helpers shared by the bench/<group>/run scripts (sourced after scripts/lib.sh, which gives
# `die` and `log`). Each script keeps what is its own: its services, its clean-up, its report.

random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

fmt() { awk -v v="$1" -v d="${2:-2}" 'BEGIN { printf "%.*f", d, v }'; }
load1() { cut -d' ' -f1 /proc/loadavg; }

# Memory of a process in MiB: VmRSS (now) or VmHWM (peak since start).
mem_mib() { # pid field
  awk -v f="$2:" '$1 == f { printf "%.1f", $2 / 1024; found = 1 } END { if (!found) exit 1 }' \
    "/proc/$1/status" || die "no $2 for process $1"
}

# A loopback port nobody listens on and this run has not handed out yet, appended to taken_ports.
# Below Linux's ephemeral range (32768 and up by default): a port there can be free when it is
# picked and the local end of one of the load's outgoing connections by the time a server binds it.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
taken_ports=()
free_port() {
  local port _
  for _ in $(seq 200); do
    port=$((20000 + RANDOM % 12000))
    if [[ " ${taken_ports[*]} " != *" $port "* ]] && ! port_in_use "$port"; then
      taken_ports+=("$port")
      return 0
    fi
  done
  die "found no free loopback port"
}

# One key of the RESULT line that bench/lib/report.lua (or a group's own report script) prints
# at the end of a wrk run.
result() { # file key
  awk -v key="$2" '
    $1 == "RESULT" { for (i = 2; i <= NF; i++) { n = index($i, "="); if (substr($i, 1, n - 1) == key) { v = substr($i, n + 1); found = 1 } } }
    END { if (!found) exit 1; print v }' "$1" || die "no $2 in the wrk output ($1)"
}

# Share of the CPU time, over one second, spent outside idle: what else is running on the machine.
cpu_busy() {
  local before after
  before=$(awk '/^cpu / { print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $5 + $6; exit }' /proc/stat)
  sleep 1
  after=$(awk '/^cpu / { print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $5 + $6; exit }' /proc/stat)
  awk -v a="$before" -v b="$after" 'BEGIN {
    split(a, x, " "); split(b, y, " "); t = y[1] - x[1]; i = y[2] - x[2]
    printf "%.0f", (t > 0 ? 100 * (t - i) / t : 0) }'
}

# Waits up to 30 s for the machine to be quiet (a build that just ended, other tests), then prints
# how busy the CPUs were in the last second, warning when still over the limit.
QUIET_LIMIT=20
wait_quiet() { # label
  local busy deadline=$((SECONDS + 30))
  busy=$(cpu_busy)
  while [ "$busy" -gt $QUIET_LIMIT ] && [ $SECONDS -lt $deadline ]; do
    busy=$(cpu_busy)
  done
  if [ "$busy" -gt $QUIET_LIMIT ]; then
    printf 'warning: the CPUs were still %s%% busy just before %s: other work on this machine skews the figures\n' "$busy" "$1" >&2
  fi
  echo "$busy"
}

# Postgres as the application role of scripts/lib.sh (PGPASSWORD set by the caller), and the URL
# of one of its databases. Every benchmark talks to Postgres in plaintext on loopback: libpq
# would otherwise negotiate TLS with a server that offers it (sslmode=prefer) while better-auth's
# pg driver never does, and pgbench is told the same (PGSSLMODE), so that the two sides of every
# comparison pay for the same transport.
app_psql() { # database, then psql arguments
  local db=$1
  shift
  # Bounded, so that a stuck database ends the run instead of hanging it.
  timeout 120 psql -h 127.0.0.1 -p "$PG_PORT" -U "$APP_DB_USER" -d "$db" -v ON_ERROR_STOP=1 -qAt "$@"
}
app_url() { echo "postgres://$APP_DB_USER:$APP_DB_PASSWORD@127.0.0.1:$PG_PORT/$1?sslmode=disable"; }
export PGSSLMODE=disable

wait_ready() { # name pid url
  local deadline=$((SECONDS + 120))
  until curl -fsS -o /dev/null --max-time 2 "$3" 2>/dev/null; do
    kill -0 "$2" 2>/dev/null || die "$1 exited before answering $3"
    [ $SECONDS -lt $deadline ] || die "$1 did not answer $3 within 120s"
    sleep 0.3
  done
}

# For a group that starts processes into pids/names (their output in $work/NAME.log) and creates
# Postgres databases with create_database: stops them, drops the databases and removes $work on
# exit (`trap cleanup EXIT`), showing the processes' last lines when the run failed before
# `finished=1`.
cleanup() {
  local status=$? i
  set +e
  trap - EXIT INT TERM
  if [ $status -ne 0 ] && [ $finished -eq 0 ]; then
    for i in "${!pids[@]}"; do
      if [ -s "$work/${names[$i]}.log" ]; then
        printf '\n--- last lines of %s ---\n' "${names[$i]}" >&2
        tail -n 20 "$work/${names[$i]}.log" >&2
      fi
    done
  fi
  if [ ${#pids[@]} -gt 0 ]; then
    log "stopping the services"
    kill -TERM "${pids[@]}" 2>/dev/null
    for i in "${pids[@]}"; do wait "$i" 2>/dev/null; done
  fi
  for i in "${databases[@]}"; do
    app_psql postgres -c "DROP DATABASE IF EXISTS \"$i\" WITH (FORCE)" >/dev/null 2>&1 ||
      app_psql postgres -c "DROP DATABASE IF EXISTS \"$i\"" >/dev/null 2>&1 ||
      printf 'warning: could not drop the database %s\n' "$i" >&2
  done
  rm -rf "$work"
  exit $status
}

create_database() {
  databases+=("$1")
  app_psql postgres -c "CREATE DATABASE \"$1\"" >/dev/null
}

# The commit measured, marked when the working tree differs from it in anything that could change
# a figure. The figures and tables that runs write (results.json, last-run.md, the README's table)
# and the documentation do not count: a group run after another, in one bench/run, would otherwise
# see the first group's fresh results as uncommitted changes.
measured_commit() {
  local commit
  commit=$(git rev-parse --short HEAD 2>/dev/null) || { echo unknown; return; }
  if [ -n "$(git --no-optional-locks status --porcelain --untracked-files=no -- ':/' \
    ':(top,exclude,glob)**/*.md' ':(top,exclude,glob)bench/**/results.json' \
    2>/dev/null)" ]; then
    commit="$commit with uncommitted changes"
  fi
  echo "$commit"
}
