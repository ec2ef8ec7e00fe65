#!/usr/bin/env bash
# Re-fetch the inbox's vendored htmx at its pinned version.
#
# As scripts/vendor-graphiql.sh does for GraphiQL: the package is fetched from
# the npm registry with `npm pack`, its tarball is checked against the pinned
# sha512 (npm's `integrity`), and only the file the page loads is copied,
# unchanged, with the package's LICENSE beside it, into
# src/mneia/inbox/static/NAME@VERSION/. Nothing is fetched at run time: the
# files are committed and shipped in the wheel. To move to another version,
# change the pin here and in src/mneia/inbox/assets.py, then run this script.
set -euo pipefail
cd "$(dirname "$0")/.."

STATIC=src/mneia/inbox/static
# package  version  integrity  files (paths inside the tarball's package/)
PINS=(
    "htmx.org 2.0.11 sha512-Thx/WtpeOQqSrqBCw/A1cwGJGg4UrVa3+sW0GmrM3p4gJgO89ecH4qtbnyzDDWFvBTqjnIMCgELTNt636dtamA== dist/htmx.min.js"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for pin in "${PINS[@]}"; do
    read -r name version integrity files <<<"$pin"
    tarball=$(cd "$work" && npm pack --silent "$name@$version" | tail -n 1)
    actual="sha512-$(openssl dgst -sha512 -binary "$work/$tarball" | base64 -w 0)"
    if [[ "$actual" != "$integrity" ]]; then
        echo "vendor-htmx: $name@$version: integrity $actual, pinned $integrity" >&2
        exit 1
    fi
    unpacked="$work/$name"
    mkdir -p "$unpacked"
    tar -xzf "$work/$tarball" -C "$unpacked"
    target="$STATIC/$name@$version"
    rm -rf "$target"
    mkdir -p "$target"
    for file in $files LICENSE; do
        cp "$unpacked/package/$file" "$target/$(basename "$file")"
    done
    echo "$name@$version: $integrity -> $target"
done
