#!/usr/bin/env bash
# Re-fetch the browser files the app serves (GraphiQL's page, the inbox's htmx) at their pinned versions.
#
# Each package is fetched from the npm registry with `npm pack`, its tarball is
# checked against the pinned sha512 (npm's `integrity`), and only the files the
# pages load are copied, unchanged, with the package's LICENSE beside them, into
# src/mneia/<part>/static/NAME@VERSION/. Nothing is fetched at run time: the
# files are committed and shipped in the wheel. To move to another version,
# change a pin here and where the part names it (src/mneia/graphiql/__init__.py,
# src/mneia/inbox/assets.py), then run this script.
set -euo pipefail
cd "$(dirname "$0")/.."

# static directory  package  version  integrity  files (paths inside the tarball's package/)
PINS=(
    "src/mneia/graphiql/static graphiql 4.1.2 sha512-rNlzQIAzm6i2KBXmVQWBgLvt0TloxFVB2d18bukvdsvjEuFDHsKx5IVOomL1W1o5WW+tE54+ioHb2AEKzO2cUg== graphiql.min.js graphiql.min.css"
    "src/mneia/graphiql/static react 18.3.1 sha512-wS+hAgJShR0KhEvPJArfuPVN1+Hz1t0Y6n5jLrGQbkb4urgPE/0Rve+1kMB1v/oWgHgm4WIcV+i7F2pTVj+2iQ== umd/react.production.min.js"
    "src/mneia/graphiql/static react-dom 18.3.1 sha512-5m4nQKp+rZRb09LNH59GM4BxTh9251/ylbKIbpe7TpGxfJ+9kv6BLkLBXIjjspbgbnIBNqlI23tRnTWT0snUIw== umd/react-dom.production.min.js"
    "src/mneia/inbox/static htmx.org 2.0.11 sha512-Thx/WtpeOQqSrqBCw/A1cwGJGg4UrVa3+sW0GmrM3p4gJgO89ecH4qtbnyzDDWFvBTqjnIMCgELTNt636dtamA== dist/htmx.min.js"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for pin in "${PINS[@]}"; do
    read -r static name version integrity files <<<"$pin"
    tarball=$(cd "$work" && npm pack --silent "$name@$version" | tail -n 1)
    actual="sha512-$(openssl dgst -sha512 -binary "$work/$tarball" | base64 -w 0)"
    if [[ "$actual" != "$integrity" ]]; then
        echo "vendor: $name@$version: integrity $actual, pinned $integrity" >&2
        exit 1
    fi
    unpacked="$work/$name"
    mkdir -p "$unpacked"
    tar -xzf "$work/$tarball" -C "$unpacked"
    target="$static/$name@$version"
    rm -rf "$target"
    mkdir -p "$target"
    for file in $files LICENSE; do
        cp "$unpacked/package/$file" "$target/$(basename "$file")"
    done
    echo "$name@$version: $integrity -> $target"
done
