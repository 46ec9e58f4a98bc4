#!/usr/bin/env bash
# The VS Code extension's toolchain, cached OUTSIDE the clone so a second run is quick:
#   $SHAPESCRIPT_CACHE/vscode/ (default ~/.cache/shapescript/vscode/)
#     ext-<hash of package-lock.json>/node_modules   the extension's npm packages
#                                                      (esbuild, typescript, vsce 3,
#                                                      playwright-core, vscode-textmate …)
#     code-server-4.100.3/                            code-server (VS Code 1.100.3), npm ci from
#                                                      scripts/code-server/package-lock.json
# and links editors/vscode/node_modules to the first. Also the Debian packages the
# end-to-end test needs (chromium, ripgrep, and the headers code-server's native
# modules build against), when they are missing and we are root.
#
# Idempotent: each part is skipped while its stamp is there (about a second when all is cached).
# Safe to call from scripts/setup.sh: a part that can't be installed prints why; the
# script then fails under CI=true (where the end-to-end test must run) and only warns
# otherwise (the test then skips). SHAPESCRIPT_SKIP_VSCODE=1 skips it all.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
EXT="$ROOT/editors/vscode"
CACHE="${SHAPESCRIPT_CACHE:-$HOME/.cache/shapescript}/vscode"
CS_LOCK_DIR="$ROOT/scripts/code-server"   # package.json + package-lock.json: code-server, locked
CODE_SERVER_VERSION=$(node -p 'require(process.argv[1]).dependencies["code-server"]' "$CS_LOCK_DIR/package.json")
APT_PACKAGES="chromium ripgrep libkrb5-dev libxkbfile-dev libsecret-1-dev"

say() { echo "setup_vscode: $*" >&2; }

fail() {
    say "$*"
    if [ "${CI:-}" = "true" ]; then
        exit 1
    fi
    say "warning: going on without it; the VS Code end-to-end test will skip"
    exit 0
}

if [ "${SHAPESCRIPT_SKIP_VSCODE:-}" = "1" ]; then
    say "skipped (SHAPESCRIPT_SKIP_VSCODE=1)"
    exit 0
fi

command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm (Node 20) are needed"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || fail "Node 20 or newer is needed, found $(node --version)"

mkdir -p "$CACHE"
# One setup at a time per cache (CI jobs, parallel shells).
exec 9>"$CACHE/.lock"
flock 9

# --- Debian packages -------------------------------------------------------------------
missing=""
for p in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
        say "installing Debian packages:$missing"
        (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing) \
            >"$CACHE/apt.log" 2>&1 || fail "apt-get install$missing failed (log: $CACHE/apt.log)"
    else
        fail "missing Debian packages:$missing (apt-get install them as root)"
    fi
fi

export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# --- the extension's npm packages ------------------------------------------------------
# keyed by the lock and the dependency lists only: editing the manifest's contributions
# does not reinstall
hash=$( (cd "$EXT" && node -e 'const p = require("./package.json");
    console.log(JSON.stringify([p.dependencies, p.devDependencies]))' && cat package-lock.json) \
    | sha256sum | cut -c1-16)
ext_dir="$CACHE/ext-$hash"
if [ ! -e "$ext_dir/.done" ]; then
    say "installing the extension's npm packages into $ext_dir"
    rm -rf "$ext_dir"
    mkdir -p "$ext_dir"
    cp "$EXT/package.json" "$EXT/package-lock.json" "$ext_dir/"
    (cd "$ext_dir" && npm ci --prefer-offline --no-progress --loglevel=error) >"$ext_dir.log" 2>&1 \
        || { rm -rf "$ext_dir"; fail "npm ci failed (log: $ext_dir.log)"; }
    touch "$ext_dir/.done"
    # keep the two newest installs; older ones belong to older package-locks
    ls -dt "$CACHE"/ext-*/ 2>/dev/null | tail -n +3 | xargs -r rm -rf
fi
if [ "$(readlink "$EXT/node_modules" 2>/dev/null || true)" != "$ext_dir/node_modules" ]; then
    if [ -e "$EXT/node_modules" ] && [ ! -L "$EXT/node_modules" ]; then
        rm -rf "$EXT/node_modules"
    fi
    ln -sfn "$ext_dir/node_modules" "$EXT/node_modules"
fi

# --- code-server -----------------------------------------------------------------------
cs_hash=$(cat "$CS_LOCK_DIR/package.json" "$CS_LOCK_DIR/package-lock.json" | sha256sum | cut -c1-16)
cs_dir="$CACHE/code-server-$CODE_SERVER_VERSION"   # .done holds the hash of the lock it came from
if [ "$(cat "$cs_dir/.done" 2>/dev/null)" != "$cs_hash" ]; then
    say "installing code-server $CODE_SERVER_VERSION into $cs_dir (about a minute)"
    rm -rf "$cs_dir"
    mkdir -p "$cs_dir/tmp"
    # @vscode/ripgrep's postinstall downloads rg from GitHub unless its cache holds the
    # archive: give it Debian's rg (editor-clients.md).
    rg_cache="$cs_dir/tmp/vscode-ripgrep-cache-1.15.11"
    mkdir -p "$rg_cache/rg-root"
    cp "$(command -v rg)" "$rg_cache/rg-root/rg"
    tar -C "$rg_cache/rg-root" -czf "$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" rg
    cp "$CS_LOCK_DIR/package.json" "$CS_LOCK_DIR/package-lock.json" "$cs_dir/"
    (cd "$cs_dir" && TMPDIR="$cs_dir/tmp" npm_config_unsafe_perm=true npm_config_yes=true npm_config_nodedir=/usr \
        npm ci --no-progress --loglevel=error) >"$cs_dir.log" 2>&1 \
        || { rm -rf "$cs_dir"; fail "npm ci of code-server@$CODE_SERVER_VERSION (scripts/code-server/package-lock.json) failed (log: $cs_dir.log)"; }
    # it writes ~/.config/code-server/config.yaml on every start: keep HOME private
    HOME="$cs_dir/tmp" XDG_CONFIG_HOME="$cs_dir/tmp" XDG_DATA_HOME="$cs_dir/tmp" \
        "$cs_dir/node_modules/.bin/code-server" --version >/dev/null 2>&1 \
        || { rm -rf "$cs_dir"; fail "code-server was installed but does not run (see $cs_dir.log)"; }
    rm -rf "$cs_dir/tmp"
    echo "$cs_hash" >"$cs_dir/.done"
fi
