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

# The project's virtual environment, installed from a hash lock alone (locks/, made by scripts/lock):
# `ensure_venv host` for ./scripts/up, `ensure_venv dev` (host, test and inspect) for ./scripts/test.
# Every package comes from the lock with its sha256 (pip --require-hashes), then repro itself with
# --no-deps --no-build-isolation, so `pip freeze` is the lock's set. The dev lock holds the host
# lock's pins (scripts/lock resolves one inside the other), so a venv made for the tests serves up;
# any other change of lock makes the venv anew. The installed lock's name and sha256 go to
# $VENV/repro-lock.json, which a run records (run.json's host_lock). REPRO_PYTHON picks the interpreter.
ensure_venv() {
    local want="${1:-host}" python="${REPRO_PYTHON:-python3}" version lock
    version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" || die "$python does not run (set REPRO_PYTHON)"
    lock="$REPO_ROOT/locks/$want-py$version.txt"
    [ -f "$lock" ] || die "no lock for Python $version (locks/ has $(cd "$REPO_ROOT/locks" && ls -- *.txt | tr '\n' ' ')): use Python 3.11 or 3.12 (REPRO_PYTHON=python3.11), or add it to scripts/lock"
    if ! venv_holds "$want" "$version"; then
        say "installing repro into $VENV from locks/$want-py$version.txt (hashes required)"
        "$python" -m venv --clear "$VENV"
        "$VENV/bin/python" -m pip install -q --require-hashes -r "$lock"
        "$VENV/bin/python" -m pip install -q --no-deps --no-build-isolation -e "$REPO_ROOT"
        write_lock_stamp "$lock"
    fi
    export PATH="$VENV/bin:$PATH"
}

# Whether the venv was installed from the wanted lock (or from the dev lock, which holds the host
# lock's pins) as it stands now, for this Python.
venv_holds() {
    local want="$1" version="$2" lock
    [ -x "$VENV/bin/python" ] && [ -f "$VENV/repro-lock.json" ] || return 1
    for lock in "$want" dev; do
        [ "$want" = host ] || [ "$lock" = "$want" ] || continue
        [ -f "$REPO_ROOT/locks/$lock-py$version.txt" ] || continue
        if "$VENV/bin/python" - "$VENV/repro-lock.json" "$REPO_ROOT/locks/$lock-py$version.txt" <<'PY'
import hashlib, json, sys
stamp, lock = json.load(open(sys.argv[1])), open(sys.argv[2], "rb").read()
sys.exit(0 if stamp.get("sha256") == hashlib.sha256(lock).hexdigest() else 1)
PY
        then return 0; fi
    done
    return 1
}

# $VENV/repro-lock.json: the lock's file name, its sha256 and its pins (name -> version), which a
# run compares with what is installed (repro.bundle.provenance.host_lock).
write_lock_stamp() {
    "$VENV/bin/python" - "$1" "$VENV/repro-lock.json" <<'PY'
import hashlib, json, pathlib, re, sys
lock = pathlib.Path(sys.argv[1])
text = lock.read_text()
pins = dict(re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ \\;]+)", text, re.M))
stamp = {"name": lock.name, "sha256": hashlib.sha256(lock.read_bytes()).hexdigest(), "pins": pins}
pathlib.Path(sys.argv[2]).write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n")
PY
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
