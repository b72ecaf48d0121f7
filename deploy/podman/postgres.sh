#!/bin/sh
# PostgreSQL (pgserver's PostgreSQL 16 with pgvector, inside the image) as a container's only process: the stand-in
# cluster's and `make compose-up`'s shared store. First start: initdb into /pgdata in UTF8 (under the C locale it would
# be SQL_ASCII, whose text psycopg hands back as bytes, which the rag store misreads), scram passwords from
# $PASSWORD_FILE for the networks this container is on (samenet), and the docuthinker database. Then PostgreSQL in the
# foreground as PID 1, so stopping or killing the container is stopping or killing PostgreSQL itself.
set -eu
bin="$(python -c 'import os, pgserver; print(os.path.dirname(pgserver.__file__))')/pginstall/bin"
PASSWORD_FILE="${PASSWORD_FILE:-/run/docuthinker/postgres/password}"
if [ ! -f /pgdata/PG_VERSION ]; then
  "$bin/initdb" -D /pgdata -U docuthinker --encoding=UTF8 --locale=C.UTF-8 --auth-local=trust \
    --auth-host=scram-sha-256 --pwfile="$PASSWORD_FILE" >/dev/null
  echo "host all all samenet scram-sha-256" >> /pgdata/pg_hba.conf
  echo "CREATE DATABASE docuthinker" | "$bin/postgres" --single -D /pgdata postgres >/dev/null
fi
exec "$bin/postgres" -D /pgdata -h 0.0.0.0 -p "${PGPORT:-5432}" -k /tmp -c max_connections=200
