#!/bin/sh
# Usage: ./cold-build-one.sh FEATURES   (none | sqlx | sqlx,pg): one cold release build.
set -e
cd "$(dirname "$0")"
f=${1:-none}
dir=target/cold-$f
rm -rf "$dir"
if [ "$f" = none ]; then flags=""; else flags="--features $f"; fi
start=$(date +%s.%N)
CARGO_TARGET_DIR=$dir cargo build --release -q $flags
end=$(date +%s.%N)
echo "cold release build, features=$f: $(echo "$end - $start" | bc) s (nproc=$(nproc), load $(cut -d' ' -f1-3 /proc/loadavg))"
rm -rf "$dir"
