#!/usr/bin/env bash
# licence-server under load, beside baselines measured in the same run on the same machine:
#
#   validate        POST /api/license/validate (Bearer)   vs  sysbench oltp_point_select on MariaDB
#   usage-consume   POST /api/usage/consume (Bearer)      vs  sysbench conditional upsert on MariaDB
#   200 MB download GET  /api/download (signed address)   vs  nginx serving the same file
#
# Everything runs on 127.0.0.1 against the release build, in a scratch database that is dropped
# afterwards. Each load phase lasts BENCH_DURATION seconds (default 5).
#
#   bench/licence/run.sh
#
# Settings (environment): TEST_MYSQL_URL (default mysql://app:app@127.0.0.1:3306/, a user that
# may create databases), BENCH_DURATION, BENCH_CONNECTIONS (default 32), BENCH_THREADS (default 2),
# BENCH_LICENCES (default 1000), BENCH_PORT (default 18083), BENCH_NGINX_PORT (default 18090).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
duration=${BENCH_DURATION:-5}
conns=${BENCH_CONNECTIONS:-32}
threads=${BENCH_THREADS:-2}
licences=${BENCH_LICENCES:-1000}
port=${BENCH_PORT:-18083}
nginx_port=${BENCH_NGINX_PORT:-18090}
mysql_url=${TEST_MYSQL_URL:-mysql://app:app@127.0.0.1:3306/}

need() {
    local missing=()
    for tool in "$@"; do
        command -v "${tool%%:*}" >/dev/null || [[ -x /usr/sbin/${tool%%:*} ]] || missing+=("${tool#*:}")
    done
    if ((${#missing[@]})); then
        echo "installing ${missing[*]}" >&2
        local sudo=""
        [[ $(id -u) -eq 0 ]] || sudo=sudo
        $sudo apt-get install -y "${missing[@]}" >/dev/null
    fi
}
need wrk:wrk sysbench:sysbench nginx:nginx curl:curl jq:jq mysql:mariadb-client openssl:openssl
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

# mysql://user:password@host:port/
rest=${mysql_url#mysql://}
userinfo=${rest%%@*}
hostport=${rest#*@}
hostport=${hostport%%/*}
db_user=${userinfo%%:*}
db_pass=${userinfo#*:}
db_host=${hostport%%:*}
db_port=${hostport##*:}
[[ $db_port == "$hostport" ]] && db_port=3306
export MYSQL_PWD=$db_pass
sql() { mysql -h "$db_host" -P "$db_port" -u "$db_user" --batch --skip-column-names "$@"; }

for p in "$port" "$nginx_port"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        echo "port $p is in use; set BENCH_PORT / BENCH_NGINX_PORT" >&2
        exit 1
    fi
done

echo "== building the release binary" >&2
(cd "$root" && cargo build --release -p licence-server --quiet)
bin=$root/target/release/licence-server

work=$(mktemp -d)
# `t_<unix time>_…` is the name pattern the test user may create (and that test runs clean up).
db="t_$(date +%s)_licbench$$"
server_pid=""
nginx_pid=""
cleanup() {
    [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    [[ -n $nginx_pid ]] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
    sql -e "DROP DATABASE IF EXISTS \`$db\`" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

sql -e "CREATE DATABASE \`$db\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
database_url="mysql://$db_user:$db_pass@$db_host:$db_port/$db"

echo "== writing a 200 MB release" >&2
mkdir -p "$work/builds"
head -c $((200 * 1024 * 1024)) /dev/urandom >"$work/builds/App-bench.bin"
echo '{"version":"9.9.9","pubDate":"2026-11-22T00:00:00Z","notes":"bench","files":[{"platform":"linux","name":"App-bench.bin"}]}' \
    >"$work/builds/latest.json"

echo "== starting licence-server on 127.0.0.1:$port" >&2
env -i PATH="$PATH" \
    DATABASE_URL="$database_url" DATABASE_POOL_SIZE=32 LISTEN_ADDR="127.0.0.1:$port" \
    PUBLIC_BASE_URL="http://127.0.0.1:$port" \
    LICENCE_JWT_KEYS="bench:$(openssl rand -hex 32)" DOWNLOAD_SIGNING_SECRET="$(openssl rand -hex 32)" \
    BUILDS_DIR="$work/builds" PAYMENT_WEBHOOK_SECRET="$(openssl rand -hex 16)" \
    PAYMENT_VARIANT_BASIC=1 PAYMENT_VARIANT_PRO=2 PAYMENT_VARIANT_PREMIUM=3 PAYMENT_VARIANT_ANNUAL=4 \
    SMTP_URL="smtp://127.0.0.1:9" MAIL_FROM="Bench <bench@example.com>" RUST_LOG=warn \
    "$bin" serve >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
    curl -fs "http://127.0.0.1:$port/ready" >/dev/null && break
    sleep 0.1
done
curl -fs "http://127.0.0.1:$port/ready" >/dev/null || { cat "$work/server.log" >&2; exit 1; }

echo "== $licences Premium licences (150 units a day each), one activation each" >&2
sql "$db" -e "INSERT INTO licence (id, license_key, status, plan, customer_email)
    SELECT UUID(), CONCAT('BENCH-', LPAD(seq, 6, '0')), 'active', 'premium', 'bench@example.com'
      FROM seq_1_to_${licences}"
sql "$db" -e "SELECT license_key FROM licence" >"$work/keys.txt"
xargs -P 8 -I{} curl -fs -X POST "http://127.0.0.1:$port/api/license/activate" \
    -H 'content-type: application/json' -d '{"licenseKey":"{}","instanceId":"bench-pc"}' \
    <"$work/keys.txt" | jq -r .token >"$work/tokens.txt"
[[ $(wc -l <"$work/tokens.txt") -eq $licences ]] || { echo "activation failed" >&2; exit 1; }

# Requests per second of a wrk run; also prints its non-2xx count to stderr.
wrk_rate() {
    local out
    out=$(TOKENS="$work/tokens.txt" BENCH_PATH="$1" BENCH_METHOD="${2:-POST}" \
        wrk -t"$threads" -c"$conns" -d"${duration}s" -s "$here/bearer.lua" "http://127.0.0.1:$port")
    echo "$out" | grep -E 'Non-2xx' >&2 || true
    echo "$out" | awk '/Requests\/sec/ {print $2}'
}

echo "== licence-server: validate" >&2
validate_rps=$(wrk_rate /api/license/validate)
echo "== licence-server: usage-consume" >&2
consume_rps=$(wrk_rate /api/usage/consume)
consumed=$(sql "$db" -e "SELECT COALESCE(SUM(used), 0) FROM daily_usage")
over=$(sql "$db" -e "SELECT COUNT(*) FROM daily_usage WHERE used > 150")

sb=(--mysql-host="$db_host" --mysql-port="$db_port" --mysql-user="$db_user"
    --mysql-password="$db_pass" --mysql-db="$db" --threads="$conns" --time="$duration")
echo "== MariaDB baseline: sysbench point select" >&2
sysbench oltp_point_select "${sb[@]}" --tables=1 --table-size=10000 prepare >/dev/null
select_qps=$(sysbench oltp_point_select "${sb[@]}" --tables=1 --table-size=10000 run |
    awk '/queries:/ {gsub(/[()]/, "", $3); print $3}')
echo "== MariaDB baseline: sysbench conditional upsert" >&2
sysbench "$here/upsert.lua" "${sb[@]}" prepare >/dev/null
upsert_qps=$(sysbench "$here/upsert.lua" "${sb[@]}" run |
    awk '/transactions:/ {gsub(/[()]/, "", $3); print $3}')

echo "== 200 MB download: licence-server and nginx" >&2
latest=$(curl -fs -H "Authorization: Bearer $(head -n1 "$work/tokens.txt")" "http://127.0.0.1:$port/api/latest")
url=$(jq -r '.files[0].url' <<<"$latest")
want=$(jq -r '.files[0].sha256' <<<"$latest")
got=$(curl -fs "$url" | sha256sum | cut -d' ' -f1)
[[ $got == "$want" ]] || { echo "download digest mismatch" >&2; exit 1; }

cat >"$work/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 64; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server { listen 127.0.0.1:$nginx_port; root $work/builds; }
}
EOF
mkdir -p "$work/tmp"
# nginx started by root serves as an unprivileged worker user: let it read the release.
chmod 755 "$work" "$work/builds"
chmod 644 "$work/builds/"*
"$nginx_bin" -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 1 50); do
    curl -fs -o /dev/null "http://127.0.0.1:$nginx_port/latest.json" && break
    sleep 0.1
done

# Best of three, in MB/s.
best_speed() {
    local best=0 speed
    for _ in 1 2 3; do
        speed=$(curl -fs -o /dev/null -w '%{speed_download}' "$1") || {
            echo "download from $1 failed" >&2
            exit 1
        }
        best=$(awk -v a="$best" -v b="$speed" 'BEGIN {print (b > a) ? b : a}')
    done
    awk -v s="$best" 'BEGIN {printf "%.0f", s / 1048576}'
}
server_mbps=$(best_speed "$url")
nginx_mbps=$(best_speed "http://127.0.0.1:$nginx_port/App-bench.bin")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}'; }
echo
echo "licence-server benchmark: ${duration}s per phase, $conns connections, $(nproc) cores"
printf '%-32s %12s   %-34s %12s   %s\n' "licence-server" "rate" "baseline (same run)" "rate" "ratio"
printf '%-32s %10.0f/s   %-34s %10.0f/s   %s\n' "validate (Bearer)" "$validate_rps" \
    "sysbench point select" "$select_qps" "$(ratio "$validate_rps" "$select_qps")"
printf '%-32s %10.0f/s   %-34s %10.0f/s   %s\n' "usage-consume (Bearer)" "$consume_rps" \
    "sysbench conditional upsert" "$upsert_qps" "$(ratio "$consume_rps" "$upsert_qps")"
printf '%-32s %8s MB/s   %-34s %8s MB/s   %s\n' "200 MB download" "$server_mbps" \
    "nginx, same file" "$nginx_mbps" "$(ratio "$server_mbps" "$nginx_mbps")"
echo "units consumed: $consumed; licences past their daily quota: $over (must be 0)"
