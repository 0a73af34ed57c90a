# Shared preparation of scripts/stack and scripts/test: system packages, both database servers,
# the development role and databases. Sourced, not run. Every step is idempotent, so running it
# on a machine that is already prepared costs a few seconds.

# Development credentials of the local database servers. They never leave this machine; the
# deployment uses its own (deploy/env/).
APP_DB_USER=app
APP_DB_PASSWORD=app
PG_PORT=5432
MARIADB_PORT=3306
PG_DATABASE=nutrition
MARIADB_DATABASE=licensing

log() { printf '\033[1m==>\033[0m %s\n' "$*" >&2; }
die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "root rights are needed to run: $*"
  fi
}

# Debian packages the build, the databases and the proxy need.
REQUIRED_PACKAGES=(
  postgresql postgresql-client
  mariadb-server mariadb-client
  nginx-light
  libmariadb-dev libmariadb-dev-compat libssl-dev pkg-config
  python3-venv curl ca-certificates
)

# What only the tests need: a real browser and its WebDriver, and promtool (package prometheus)
# for scripts/check-deploy.
TEST_PACKAGES=(chromium chromium-driver prometheus)

# Installs the given packages (default: REQUIRED_PACKAGES) where missing.
ensure_packages() {
  local missing=() pkg
  local wanted=("$@")
  [ ${#wanted[@]} -gt 0 ] || wanted=("${REQUIRED_PACKAGES[@]}")
  for pkg in "${wanted[@]}"; do
    # nginx counts as present in any flavour.
    if [ "$pkg" = nginx-light ] && { command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; }; then
      continue
    fi
    # python3-venv is only needed where python3 cannot make a venv by itself.
    if [ "$pkg" = python3-venv ] && python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
      continue
    fi
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null 2>&1 || die "missing packages (${missing[*]}) and no apt-get to install them"
    log "installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # Installing a server package on Debian may try to start it through systemd, which is absent
    # in containers; policy-rc.d forbids that, and the servers are started below instead.
    as_root sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d'
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    as_root rm -f /usr/sbin/policy-rc.d
  fi
}

wait_until() { # seconds description command...
  local seconds=$1 what=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "$what did not happen within ${seconds}s"
    sleep 0.5
  done
}

ensure_postgres() {
  if pg_isready -q -h 127.0.0.1 -p "$PG_PORT"; then
    return
  fi
  log "starting PostgreSQL"
  local version
  version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)
  [ -n "$version" ] || die "PostgreSQL is installed but has no cluster in /etc/postgresql"
  if ! pg_lsclusters -h 2>/dev/null | awk '{print $2}' | grep -qx main; then
    as_root pg_createcluster "$version" main >/dev/null
  fi
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start
  wait_until 60 "PostgreSQL accepting connections" pg_isready -q -h 127.0.0.1 -p "$PG_PORT"
}

mariadb_alive() { mariadb-admin --protocol=tcp -h 127.0.0.1 -P "$MARIADB_PORT" ping >/dev/null 2>&1; }

ensure_mariadb() {
  if mariadb_alive; then
    return
  fi
  log "starting MariaDB"
  as_root install -d -o mysql -g mysql /run/mysqld
  if [ ! -d /var/lib/mysql/mysql ]; then
    as_root mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
  fi
  as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
  wait_until 60 "MariaDB accepting connections" mariadb_alive
}

# psql as a superuser: over TCP where trust authentication allows it, else through the socket
# as the postgres system user (Debian's peer authentication).
pg_admin() {
  if psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -tAqc 'SELECT 1' >/dev/null 2>&1; then
    psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -tAq "$@"
  else
    as_root runuser -u postgres -- psql -p "$PG_PORT" -d postgres -v ON_ERROR_STOP=1 -tAq "$@"
  fi
}

# mariadb as root: through the socket (unix_socket authentication of root) or over TCP.
my_admin() {
  if as_root mariadb -uroot -e 'SELECT 1' >/dev/null 2>&1; then
    as_root mariadb -uroot "$@"
  else
    mariadb --protocol=tcp -h 127.0.0.1 -P "$MARIADB_PORT" -uroot "$@"
  fi
}

ensure_databases() {
  log "ensuring the development role and databases"
  # CREATEROLE: the Postgres migrations make one role per service (migration service_roles).
  pg_admin <<SQL >/dev/null
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$APP_DB_USER') THEN
    CREATE ROLE $APP_DB_USER LOGIN CREATEDB CREATEROLE PASSWORD '$APP_DB_PASSWORD';
  ELSE
    ALTER ROLE $APP_DB_USER LOGIN CREATEDB CREATEROLE PASSWORD '$APP_DB_PASSWORD';
  END IF;
END
\$\$;
SQL
  if [ "$(pg_admin -c "SELECT 1 FROM pg_database WHERE datname = '$PG_DATABASE'")" != 1 ]; then
    pg_admin -c "CREATE DATABASE $PG_DATABASE OWNER $APP_DB_USER" >/dev/null
  fi
  # The tests create and drop databases named t_<time>_<random>.
  my_admin <<SQL
CREATE DATABASE IF NOT EXISTS \`$MARIADB_DATABASE\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS '$APP_DB_USER'@'localhost' IDENTIFIED BY '$APP_DB_PASSWORD';
CREATE USER IF NOT EXISTS '$APP_DB_USER'@'127.0.0.1' IDENTIFIED BY '$APP_DB_PASSWORD';
GRANT ALL PRIVILEGES ON \`$MARIADB_DATABASE\`.* TO '$APP_DB_USER'@'localhost', '$APP_DB_USER'@'127.0.0.1';
GRANT ALL PRIVILEGES ON \`t\\_%\`.* TO '$APP_DB_USER'@'localhost', '$APP_DB_USER'@'127.0.0.1';
SQL
}

POSTGRES_APP_URL="postgres://$APP_DB_USER:$APP_DB_PASSWORD@127.0.0.1:$PG_PORT/$PG_DATABASE"
MARIADB_APP_URL="mysql://$APP_DB_USER:$APP_DB_PASSWORD@127.0.0.1:$MARIADB_PORT/$MARIADB_DATABASE"
export TEST_POSTGRES_URL="postgres://$APP_DB_USER:$APP_DB_PASSWORD@127.0.0.1:$PG_PORT/postgres"
export TEST_MYSQL_URL="mysql://$APP_DB_USER:$APP_DB_PASSWORD@127.0.0.1:$MARIADB_PORT/"

# A virtual environment under target/ holding pinned Python packages, kept between runs and made
# anew when the pins change: ensure_venv DIR "PIN PIN ...".
ensure_venv() {
  local dir=$1 pins=$2
  if [ "$(cat "$dir/pins" 2>/dev/null)" = "$pins" ]; then
    return
  fi
  log "installing $pins into $dir"
  rm -rf "$dir"
  python3 -m venv "$dir"
  # shellcheck disable=SC2086
  "$dir/bin/pip" install --quiet --disable-pip-version-check $pins
  printf '%s' "$pins" >"$dir/pins"
}

# The Python tools of scripts/check-api.
API_TOOLS_PINS="openapi-spec-validator==0.9.0 schemathesis==4.32.5"
API_TOOLS=${API_TOOLS:-$(pwd)/target/api-tools}
ensure_api_tools() { ensure_venv "$API_TOOLS" "$API_TOOLS_PINS"; }

# The local mail catcher of scripts/stack and of the browser tests: maildump, an SMTP server that
# keeps every mail it receives and lists them on a web page (and as JSON under /messages/).
# (1.1 needs Python 3.12; Debian 12 has 3.11.)
MAIL_CATCHER_PIN="maildump==1.0"
MAIL_CATCHER=${MAIL_CATCHER:-$(pwd)/target/mail-catcher}
export MAIL_CATCHER_BIN=$MAIL_CATCHER/bin/maildump
ensure_mail_catcher() { ensure_venv "$MAIL_CATCHER" "$MAIL_CATCHER_PIN"; }

# The test runner: every test in its own process, so tests that read process-wide state
# (metric counters) do not see each other. Installed from crates.io where missing.
ensure_nextest() {
  cargo nextest --version >/dev/null 2>&1 && return
  log "installing cargo-nextest"
  cargo install cargo-nextest --locked
}

ensure_rust() {
  command -v cargo >/dev/null 2>&1 || die "cargo is not installed (https://rustup.rs); rust-toolchain.toml names the version"
}

# The web app's build needs Node.js 20.19 or newer with npm (Vite's floor).
ensure_node() {
  command -v npm >/dev/null 2>&1 || ensure_packages nodejs npm
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
    die "Node.js 20.19+ with npm is not installed (the web app is built with it)"
  node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' ||
    die "Node.js $(node -v) is too old: the web app needs 20.19 or newer"
}

# Builds web/ into web/dist (served by nginx at /). npm ci runs only when the lock file changed
# since the last install.
build_web() {
  ensure_node
  if [ ! -f web/node_modules/.package-lock.json ] ||
    ! cmp -s web/package-lock.json web/node_modules/.installed-lock.json; then
    log "npm ci in web"
    (cd web && npm ci --no-audit --no-fund --loglevel=error)
    cp web/package-lock.json web/node_modules/.installed-lock.json
  fi
  log "building the web app"
  (cd web && npm run --silent build)
}

# Installs tests/node's packages exactly as locked, when the lock changed since the last install.
ensure_node_modules() {
  # Node runs better-auth's own client; any Node 20 or later will do (nodesource's carries npm).
  command -v npm >/dev/null 2>&1 || ensure_packages nodejs npm
  local dir=tests/node
  if [ ! -f "$dir/node_modules/.package-lock.json" ] ||
    ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json"; then
    log "npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json"
  fi
}

prepare() {
  ensure_rust
  ensure_packages
  ensure_postgres
  ensure_mariadb
  ensure_databases
}

# Containers without Docker, for scripts/compose-check: podman with runc, netavark and
# aardvark-dns (containers on one network reach each other by name), catatonit for `init: true`,
# debootstrap for the base image, and Debian's docker-compose, which drives podman through its
# Docker-compatible API. A drop-in of containers.conf makes podman work as root inside a container
# sandbox: runc (crun fails on a mixed cgroup v1 layout), netavark, and default rlimits within the
# hard limits of the calling shell (podman's defaults for root exceed a sandbox's limits).
PODMAN_PACKAGES=(podman runc netavark aardvark-dns catatonit iptables debootstrap docker-compose)
PODMAN_CONF=/etc/containers/containers.conf.d/50-nutrition-compose.conf
ensure_podman() {
  ensure_packages "${PODMAN_PACKAGES[@]}"
  local nofile nproc wanted
  nofile=$(ulimit -Hn)
  nproc=$(ulimit -Hu)
  [ "$nofile" = unlimited ] || [ "$nofile" -gt 65536 ] && nofile=65536
  [ "$nproc" = unlimited ] || [ "$nproc" -gt 4096 ] && nproc=4096
  wanted=$(printf '%s\n' \
    '# Written by scripts/lib.sh (ensure_podman).' \
    '[containers]' \
    "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]" \
    '[engine]' \
    'runtime = "runc"' \
    '[network]' \
    'network_backend = "netavark"')
  if [ "$(cat "$PODMAN_CONF" 2>/dev/null)" != "$wanted" ]; then
    log "configuring podman ($PODMAN_CONF)"
    as_root install -d /etc/containers/containers.conf.d
    printf '%s\n' "$wanted" | as_root tee "$PODMAN_CONF" >/dev/null
  fi
  # A store first used with CNI keeps it until reset; a reset removes every container and image,
  # so it happens only then.
  if [ "$(as_root podman info --format '{{.Host.NetworkBackend}}' 2>/dev/null)" != netavark ]; then
    log "resetting podman's store to switch it to netavark"
    as_root podman system reset -f >/dev/null
  fi
}
