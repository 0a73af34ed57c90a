#!/bin/bash
# Entrypoint of the `cron` image (deploy/Dockerfile): prepares what cron-job needs, then runs
# Debian's cron in the foreground as the container's main process.
set -euo pipefail

state=/run/push-scheduler
install -d -o root -g app -m 0750 "$state"

# The container's configuration (env_file in compose) for the jobs, which cron starts with an
# empty environment. Readable by root and the app group only: it holds the database password and
# the VAPID private key. %q quoting survives any value; cron-job reads it with bash.
env_file=$state/env
(
  umask 027
  for name in $(compgen -e); do
    case $name in
      HOME | HOSTNAME | OLDPWD | PATH | PWD | SHLVL | TERM | _) continue ;;
    esac
    printf 'export %s=%q\n' "$name" "${!name}"
  done >"$env_file"
)
chgrp app "$env_file"

# The jobs' output reaches the container log through a pipe: the jobs run as `app` and may not
# write to this process's stdout. Opened read-write, the pipe never reports end-of-file, so one
# `cat` serves every job for the life of the container.
log=$state/jobs.log
rm -f "$log"
mkfifo -m 0620 "$log"
chgrp app "$log"
cat <>"$log" &

# cron stays in the foreground (-f) so that the container lives as long as it does.
exec cron -f "$@"
