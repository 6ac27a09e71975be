#!/usr/bin/env bash
# Stand-in base images for the Dockerfile and docker-compose.yml, for machines that
# reach a Debian package mirror but no image registry (this project's CI). Each is a
# `debootstrap --variant=minbase bookworm` tree from the mirror apt already uses,
# shaped like the official image it stands in for, imported under the exact name the
# Dockerfile and docker-compose.yml pin. An image already present is left alone, so a
# warm run costs nothing; the real images are used wherever a registry answers.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=ci/images

# The pins, read from the files that use them so the two can never disagree.
python_image=$(sed -n 's/^FROM \(python:[^ ]*\).*/\1/p' Dockerfile)
postgres_image=$(sed -n 's/^ *image: *\(postgres:[^ ]*\)$/\1/p' docker-compose.yml)
[[ -n $python_image && -n $postgres_image ]] || { echo "ci/images: no pinned python/postgres image found in Dockerfile/docker-compose.yml" >&2; exit 2; }

# apt's own view of where bookworm's main component comes from; never a host of ours.
mirror=$(apt-get indextargets --format '$(SITE) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' |
  awk '$2 == "bookworm" && $3 == "main" {print $1; exit}')
[[ -n $mirror ]] || { echo "ci/images: apt has no bookworm main source (run apt-get update?)" >&2; exit 2; }

work=$(mktemp -d /var/tmp/loadkit-images.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debs"

# A minbase tree plus PACKAGES, in DIR: bookworm's main suite as the mirror has it
# today (a stand-in for a test stack, not a patched production base).
bootstrap() {
  local dir=$1 packages=$2
  debootstrap --variant=minbase --cache-dir="$work/debs" --include="$packages" \
    bookworm "$dir" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; return 1; }
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
}

# Import DIR as TAG with the given Dockerfile-style changes.
import_tree() {
  local dir=$1 tag=$2; shift 2
  local changes=()
  for change in "$@"; do changes+=(--change "$change"); done
  tar -C "$dir" -c . | docker import "${changes[@]}" - "$tag" >/dev/null
  echo "ci/images: $tag built from $mirror ($(docker image inspect -f '{{.Size}}' "$tag" | numfmt --to=iec))"
}

if ! docker image inspect "$python_image" >/dev/null 2>&1; then
  # python:3.11-slim: the interpreter, pip and venv at /usr/local, first on PATH.
  root=$work/python
  bootstrap "$root" python3,python3-venv,ca-certificates,netbase,tzdata
  chroot "$root" python3 -m venv /usr/local
  # The host's trust store, and pip told to use it (it reads its own bundle otherwise):
  # where TLS to the package index is intercepted, pip in the build verifies what the host does.
  if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$root/etc/pip.conf"
  fi
  version=$(chroot "$root" /usr/local/bin/python --version | cut -d' ' -f2)
  [[ $python_image == python:$version-* ]] ||
    { echo "ci/images: bookworm's Python is $version, the Dockerfile pins $python_image: update the pin" >&2; exit 1; }
  import_tree "$root" "$python_image" \
    'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
    'ENV LANG=C.UTF-8' "ENV PYTHON_VERSION=$version" 'CMD ["python3"]' \
    "LABEL org.loadkit.stand-in='debootstrap bookworm, Python $version'"
else
  echo "ci/images: $python_image present"
fi

if ! docker image inspect "$postgres_image" >/dev/null 2>&1; then
  # postgres:15: initdb from POSTGRES_* on first start, then the server as `postgres`.
  root=$work/postgres
  bootstrap "$root" postgresql-15
  install -m 0755 "$here/postgres-entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"
  version=$(chroot "$root" /usr/lib/postgresql/15/bin/postgres --version | awk '{print $3}')
  # bookworm moves PostgreSQL's minor version at point releases: the major must match,
  # a minor that moved on is said (and labelled), not refused.
  [[ $postgres_image == postgres:${version%%.*}[.-]* ]] ||
    { echo "ci/images: bookworm's PostgreSQL is $version, docker-compose.yml pins $postgres_image" >&2; exit 1; }
  [[ $postgres_image == postgres:$version-* ]] ||
    echo "ci/images: note: the $postgres_image stand-in holds PostgreSQL $version (label org.loadkit.stand-in)"
  import_tree "$root" "$postgres_image" \
    'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    'ENV PGDATA=/var/lib/postgresql/data' 'ENV LANG=C.UTF-8' 'VOLUME /var/lib/postgresql/data' \
    'ENTRYPOINT ["docker-entrypoint.sh"]' 'CMD ["postgres"]' 'EXPOSE 5432' \
    "LABEL org.loadkit.stand-in='debootstrap bookworm, PostgreSQL $version'"
else
  echo "ci/images: $postgres_image present"
fi
