# Shared setup steps for scripts/up, scripts/test and .ci/run. Source it; do not run it.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${REPRO_VENV:-$REPO_ROOT/.venv}"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

docker_answers() { docker info >/dev/null 2>&1; }

has_debootstrap() { command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || [ -x /sbin/debootstrap ]; }

# apt-get install the named Debian packages, as root on Debian or Ubuntu; $1 says why (for the
# error when this machine cannot).
apt_install() {
    local why="$1"; shift
    [ "$(id -u)" = 0 ] || die "$why; install $* (as root: apt-get install $*), then rerun"
    command -v apt-get >/dev/null 2>&1 || die "$why and this is not Debian/Ubuntu: install $* yourself, then rerun"
    say "installing $* (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# debootstrap, which builds the offline base image: installed on its own, whether or not Docker
# already runs (the most common machine has Docker and not debootstrap).
ensure_debootstrap() {
    has_debootstrap || apt_install "debootstrap (for the offline base image) is not installed" debootstrap
}

# A Docker engine that answers, and debootstrap: install docker.io on Debian or Ubuntu as root
# when no dockerd is installed, and start the daemon without bridge or iptables when none runs.
ensure_docker() {
    ensure_debootstrap
    if docker_answers; then return 0; fi
    command -v dockerd >/dev/null 2>&1 || apt_install "no Docker engine answers (see https://docs.docker.com/engine/install/)" docker.io
    if docker_answers; then return 0; fi
    [ "$(id -u)" = 0 ] || die "no Docker engine answers; start it (sudo systemctl start docker) and rerun"
    say "starting dockerd (--bridge=none --iptables=false --ip-forward=false), log in /var/log/repro-dockerd.log"
    nohup dockerd --bridge=none --iptables=false --ip-forward=false >/var/log/repro-dockerd.log 2>&1 &
    for _ in $(seq 1 60); do
        if docker_answers; then return 0; fi
        sleep 1
    done
    tail -n 20 /var/log/repro-dockerd.log >&2 || true
    die "dockerd did not answer within 60 s"
}

# The project's virtual environment with the host extra (and the test extra when asked).
ensure_venv() {
    local extras="${1:-host}"
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating $VENV"
        python3 -m venv "$VENV"
    fi
    local stamp="$VENV/.repro-installed-$extras"
    if [ ! -f "$stamp" ] || [ "$REPO_ROOT/pyproject.toml" -nt "$stamp" ]; then
        say "installing repro[$extras] into $VENV"
        "$VENV/bin/python" -m pip install -q --upgrade pip
        "$VENV/bin/python" -m pip install -q -e "$REPO_ROOT[$extras]"
        touch "$stamp"
    fi
    export PATH="$VENV/bin:$PATH"
}

# pdflatex and booktabs, so the tests compile the LaTeX table (best effort: the structure is
# tested without them).
ensure_latex() {
    if command -v pdflatex >/dev/null 2>&1; then return 0; fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing pdflatex (texlive-latex-base, texlive-latex-recommended)"
        { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            texlive-latex-base texlive-latex-recommended >/dev/null 2>&1; } \
            || echo "warning: pdflatex not installed; the LaTeX compile test will be skipped" >&2
    fi
}

# What the test suite drives besides Docker: ssh-keygen (bundle signatures), docker-compose (the
# compose files), chromium (the HTML report in a real browser). Best effort, as root on Debian.
ensure_test_tools() {
    local missing=()
    command -v ssh-keygen >/dev/null 2>&1 || missing+=(openssh-client)
    command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    [ "${#missing[@]}" -eq 0 ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing ${missing[*]}"
        { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; } \
            || echo "warning: could not install ${missing[*]}; the tests that need them are skipped" >&2
    fi
}
