#!/usr/bin/env bash
# Builds kube-apiserver from the Go module proxy, for the integration tests.
#
# k8s.io/kubernetes cannot be required as an ordinary module: its go.mod
# requires every staging module (k8s.io/api, k8s.io/client-go, ...) at v0.0.0
# and replaces them with ./staging/... directories, which a dependency's replace
# directives cannot provide. A small wrapper module in a temporary directory
# requires k8s.io/kubernetes and replaces each of those staging modules with its
# published release (v0.X.Y for Kubernetes v1.X.Y).
#
# The binary is cached outside the repository, keyed by version:
#   ${SWITCHYARD_CACHE:-$HOME/.cache/switchyard}/kube-apiserver-vX.Y.Z/kube-apiserver
# Nothing is done when it already exists. The path is printed on stdout (and
# nothing else is); progress goes to stderr.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.36.3}"
if [[ ! "$KUBE_VERSION" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "build-apiserver.sh: KUBE_VERSION must look like v1.X.Y, got $KUBE_VERSION" >&2
  exit 2
fi
STAGING_VERSION="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
KUBE_MINOR="${BASH_REMATCH[1]}"

CACHE_ROOT="${SWITCHYARD_CACHE:-$HOME/.cache/switchyard}"
OUT_DIR="$CACHE_ROOT/kube-apiserver-$KUBE_VERSION"
OUT="$OUT_DIR/kube-apiserver"
GO="${GO:-go}"

if [[ -x "$OUT" ]]; then
  echo "$OUT"
  exit 0
fi

mkdir -p "$OUT_DIR"

# Several test packages may ask for the binary at the same time: build once.
exec 9>"$OUT_DIR/.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
  if [[ -x "$OUT" ]]; then
    echo "$OUT"
    exit 0
  fi
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/switchyard-kube-apiserver.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"

export GOFLAGS=-mod=mod
export CGO_ENABLED=0
export GOWORK=off

start=$SECONDS
echo "build-apiserver.sh: building kube-apiserver $KUBE_VERSION into $OUT (takes minutes when cold)" >&2

# The go.mod of k8s.io/kubernetes, from the module proxy.
if ! download="$("$GO" mod download -json "k8s.io/kubernetes@$KUBE_VERSION")"; then
  echo "build-apiserver.sh: $GO mod download k8s.io/kubernetes@$KUBE_VERSION failed: $download" >&2
  exit 1
fi
gomod="$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$download")"
if [[ -z "$gomod" || ! -f "$gomod" ]]; then
  echo "build-apiserver.sh: could not download the go.mod of k8s.io/kubernetes@$KUBE_VERSION" >&2
  exit 1
fi

# Staging modules: the k8s.io/* modules that k8s.io/kubernetes both requires at
# v0.0.0 and replaces with a ./staging/ directory.
required="$(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) v0\.0\.0\([[:space:]].*\)\{0,1\}$#\1#p' "$gomod" | sort -u)"
replaced="$(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/.*#\1#p' "$gomod" | sort -u)"
staging="$(comm -12 <(echo "$required") <(echo "$replaced"))"
if [[ -z "$staging" ]]; then
  echo "build-apiserver.sh: found no staging modules in $gomod" >&2
  exit 1
fi
goline="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod" | head -n1)"
godebug="$(sed -n 's/^godebug \(.*\)$/\1/p' "$gomod" | head -n1)"

{
  echo "module switchyard.dev/kube-apiserver-build"
  echo
  echo "go ${goline:-1.26.0}"
  # The main module's godebug line is the one that counts: keep Kubernetes's.
  [[ -n "$godebug" ]] && echo "godebug $godebug"
  echo
  echo "require k8s.io/kubernetes $KUBE_VERSION"
  echo
  echo "replace ("
  while read -r m; do
    echo "	$m => $m $STAGING_VERSION"
  done <<<"$staging"
  echo ")"
} >go.mod

# Version information, as hack/lib/version.sh sets it.
ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$KUBE_MINOR"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

"$GO" build -trimpath -tags notest -ldflags "$ldflags" \
  -o "$work/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2

"$work/kube-apiserver" --version >&2
mv "$work/kube-apiserver" "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "build-apiserver.sh: built in $((SECONDS - start))s" >&2
echo "$OUT"
